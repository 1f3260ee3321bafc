import Foundation
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

/// What a server may answer a PUT or a POST, without a socket: each answer becomes a failure of
/// the right kind (retried or not, with the server's Retry-After) or a result.
@Suite("PUT and POST: the server's answers")
struct PutAndPostAnswerTests {
    static let url = "http://127.0.0.1:1/dav/a.bin"

    func put(answering response: HTTPResponse) async throws -> (Result<JobResult, TransferFailure>, ScriptedHTTP) {
        let bench = try TransferBench(size: 100)
        let server = ScriptedHTTP { _ in response }
        do {
            return (.success(try await PutTransfer(http: server).upload(bench.context(.put, url: Self.url))), server)
        } catch let failure as TransferFailure {
            return (.failure(failure), server)
        }
    }

    @Test func a201IsTheResult() async throws {
        let (result, server) = try await put(answering: ScriptedHTTP.answer(201))
        #expect(try result.get().status == 201)
        #expect(server.requests == ["PUT \(Self.url)"])
    }

    @Test(arguments: [500, 502, 503, 504, 429, 408])
    func serverTroubleIsRetried(status: Int) async throws {
        let (result, _) = try await put(answering: ScriptedHTTP.answer(status, body: "<title>busy</title>"))
        guard case .failure(let failure) = result else { Issue.record("HTTP \(status) succeeded"); return }
        #expect(failure.retryable)
        #expect(failure.error.status == status)
        #expect(failure.error.message.contains("busy"))
    }

    @Test func retryAfterIsTheServersWish() async throws {
        let (result, _) = try await put(answering: ScriptedHTTP.answer(503, ["Retry-After": "7"]))
        guard case .failure(let failure) = result else { Issue.record("503 succeeded"); return }
        #expect(failure.retryable && failure.retryAfter == .seconds(7))
    }

    /// A redirect is not followed with the file's bytes (they could go to another origin): the job
    /// fails with the status, and is not retried.
    @Test(arguments: [301, 302, 307, 308])
    func aRedirectFailsAndIsNotRetried(status: Int) async throws {
        let (result, server) = try await put(
            answering: ScriptedHTTP.answer(status, ["Location": "http://elsewhere.invalid/a.bin"]))
        guard case .failure(let failure) = result else { Issue.record("HTTP \(status) succeeded"); return }
        #expect(!failure.retryable)
        #expect(failure.error.message.contains("HTTP \(status)"))
        #expect(
            failure.error.message.contains("redirects to http://elsewhere.invalid/a.bin"),
            "the message names where to send it instead: \(failure.error.message)")
        #expect(server.requests.count == 1, "nothing is sent to the Location")
    }

    @Test func forbiddenSaysToCheckTheCredentials() async throws {
        let (result, _) = try await put(answering: ScriptedHTTP.answer(403))
        guard case .failure(let failure) = result else { Issue.record("403 succeeded"); return }
        #expect(!failure.retryable)
        #expect(failure.error.message.contains("check the user and password"))
    }

    @Test func aPostsServerTroubleIsRetriedWithItsRetryAfter() async throws {
        let bench = try TransferBench(size: 10)
        let server = ScriptedHTTP { _ in ScriptedHTTP.answer(429, ["Retry-After": "30"]) }
        let failure = await #expect(throws: TransferFailure.self) {
            try await PostTransfer(http: server).upload(bench.context(.post, url: "http://127.0.0.1:1/upload"))
        }
        #expect(failure?.retryable == true && failure?.retryAfter == .seconds(30))
    }
}

/// A tus server's answers, scripted: a conflicting offset, an upload gone mid-way or between
/// attempts, a rejected checksum.
@Suite("tus: the server's answers")
struct TusAnswerTests {
    static let endpoint = "http://127.0.0.1:1/files/"
    static let chunk: Int64 = 10

    /// A tus server holding one upload at a time; `tweak` may change what it holds or answers.
    final class Server: Sendable {
        /// The creation endpoint; upload URLs are it and a number.
        let endpoint: String
        /// What OPTIONS lists in Tus-Extension.
        let extensions: String

        init(endpoint: String = TusAnswerTests.endpoint, extensions: String = "creation,termination") {
            self.endpoint = endpoint
            self.extensions = extensions
        }

        struct State {
            var uploads: [String: Int64] = [:]
            var created = 0
            /// Called on each PATCH before it is applied: a non-nil answer replaces the server's.
            var patchOverride: (@Sendable (inout State, Int64) -> HTTPResponse?)?
            /// A PATCH with more bytes than this gets `answer` (a proxy's or framework's body limit).
            var bodyLimit: (bytes: Int64, answer: HTTPResponse)?
            /// The sizes of the PATCH bodies refused by `bodyLimit`, in order.
            var refused: [Int64] = []
        }
        let state = Mutex(State())

        func handle(_ request: HTTPRequest) -> HTTPResponse {
            state.withLock { state in
                let tus = ["Tus-Resumable": "1.0.0"]
                switch request.method {
                case "OPTIONS":
                    return ScriptedHTTP.answer(
                        204, tus.merging(["Tus-Version": "1.0.0", "Tus-Extension": extensions]) { $1 })
                case "POST":
                    state.created += 1
                    let url = "\(endpoint)\(state.created)"
                    state.uploads[url] = 0
                    return ScriptedHTTP.answer(201, tus.merging(["Location": url]) { $1 })
                case "HEAD":
                    guard let have = state.uploads[request.url] else { return ScriptedHTTP.answer(404) }
                    return ScriptedHTTP.answer(200, tus.merging(["Upload-Offset": String(have)]) { $1 })
                case "PATCH":
                    let offset = Int64(request.headers.first { $0.name == "Upload-Offset" }?.value ?? "") ?? -1
                    if let limit = state.bodyLimit, case .file(let region) = request.body, region.length > limit.bytes {
                        state.refused.append(region.length)
                        return limit.answer
                    }
                    if let override = state.patchOverride, let answer = override(&state, offset) { return answer }
                    guard let have = state.uploads[request.url] else { return ScriptedHTTP.answer(404) }
                    guard offset == have, case .file(let region) = request.body else { return ScriptedHTTP.answer(409) }
                    state.uploads[request.url] = have + region.length
                    return ScriptedHTTP.answer(204, tus.merging(["Upload-Offset": String(have + region.length)]) { $1 })
                case "DELETE":
                    guard request.headers.contains(where: { $0.name == "Tus-Resumable" }) else {
                        return ScriptedHTTP.answer(412)
                    }
                    return ScriptedHTTP.answer(state.uploads.removeValue(forKey: request.url) == nil ? 404 : 204, tus)
                default:
                    return ScriptedHTTP.answer(405)
                }
            }
        }
    }

    func upload(_ server: Server, size: Int = 35, chunk: Int64 = chunk, checkpoint: Checkpoint? = nil) async throws
        -> (Result<JobResult, any Error>, ScriptedHTTP, TransferBench)
    {
        let bench = try TransferBench(size: size)
        let http = ScriptedHTTP { server.handle($0) }
        let context = bench.context(.tus, url: server.endpoint, chunkSize: chunk, checkpoint: checkpoint)
        do {
            return (.success(try await TusTransfer(http: http).upload(context)), http, bench)
        } catch {
            return (.failure(error), http, bench)
        }
    }

    @Test func aConflictingOffsetIsAskedForAndTheUploadGoesOnFromThere() async throws {
        let server = Server()
        // After the first chunk the server holds two (another request's bytes landed): the next
        // PATCH at 10 gets 409, HEAD says 20, and the upload goes on from 20.
        server.state.withLock {
            $0.patchOverride = { state, offset in
                if offset == 10, state.uploads["\(TusAnswerTests.endpoint)1"] == 10 {
                    state.uploads["\(TusAnswerTests.endpoint)1"] = 20
                }
                return nil
            }
        }
        let (result, http, _) = try await upload(server)
        #expect(try result.get().url == "\(Self.endpoint)1")
        #expect(
            http.requests == [
                "OPTIONS \(Self.endpoint)", "POST \(Self.endpoint)", "PATCH \(Self.endpoint)1 @0",
                "PATCH \(Self.endpoint)1 @10",
                "HEAD \(Self.endpoint)1", "PATCH \(Self.endpoint)1 @20", "PATCH \(Self.endpoint)1 @30",
            ])
        #expect(server.state.withLock { $0.uploads["\(Self.endpoint)1"] } == 35)
    }

    @Test(arguments: [404, 410])
    func anUploadGoneDuringPATCHFailsTheAttemptForARetry(status: Int) async throws {
        let server = Server()
        server.state.withLock { $0.patchOverride = { _, offset in offset == 10 ? ScriptedHTTP.answer(status) : nil } }
        let (result, _, _) = try await upload(server)
        guard case .failure(let error as TransferFailure) = result else { Issue.record("\(result)"); return }
        #expect(error.retryable)
        #expect(error.error.message.contains("expired or was removed (HTTP \(status))"))
    }

    @Test func aJournaledUploadTheServerNoLongerHasIsStartedAgain() async throws {
        let server = Server()
        let (result, http, bench) = try await upload(
            server, checkpoint: Checkpoint(TusCheckpoint(uploadURL: "\(Self.endpoint)old", expires: nil)))
        #expect(try result.get().url == "\(Self.endpoint)1")
        #expect(
            Array(http.requests.prefix(3)) == [
                "OPTIONS \(Self.endpoint)", "HEAD \(Self.endpoint)old", "POST \(Self.endpoint)",
            ])
        #expect(bench.notes.withLock { $0 }.contains { $0.contains("no longer has the upload") })
        #expect(bench.commits.entries.first == .init(acked: 0, durable: true), "the new upload URL is journaled first")
    }

    @Test func aJournaledUploadResumesAtTheServersOffset() async throws {
        let server = Server()
        server.state.withLock {
            $0.uploads["\(Self.endpoint)7"] = 20
        }
        let (result, http, _) = try await upload(
            server, checkpoint: Checkpoint(TusCheckpoint(uploadURL: "\(Self.endpoint)7", expires: nil)))
        #expect(try result.get().url == "\(Self.endpoint)7")
        #expect(
            http.requests.filter { $0.hasPrefix("PATCH") } == [
                "PATCH \(Self.endpoint)7 @20", "PATCH \(Self.endpoint)7 @30",
            ])
    }

    @Test func aRejectedChecksumIsSentAgainAtMostThreeTimes() async throws {
        let twice = Server()
        let rejected = Mutex(0)
        twice.state.withLock {
            $0.patchOverride = { _, offset in
                offset == 10
                    && rejected.withLock { count in
                        count += 1; return count <= 2
                    } ? ScriptedHTTP.answer(460) : nil
            }
        }
        let (result, http, _) = try await upload(twice)
        #expect(try result.get().status == 204)
        #expect(http.requests.filter { $0.hasSuffix("@10") }.count == 3, "sent again twice")

        let always = Server()
        always.state.withLock { $0.patchOverride = { _, offset in offset == 10 ? ScriptedHTTP.answer(460) : nil } }
        let (failed, again, _) = try await upload(always)
        guard case .failure(let error as TransferFailure) = failed else { Issue.record("\(failed)"); return }
        #expect(error.error.status == 460)
        #expect(again.requests.filter { $0.hasSuffix("@10") }.count == 4, "the first try and three more")
    }

    /// Cancel: DELETE with Tus-Resumable; an upload already gone (404) is what was wanted.
    @Test func aDiscardDeletesTheUploadAndAGoneOneIsFine() async throws {
        let server = Server()
        server.state.withLock { $0.uploads["\(Self.endpoint)3"] = 10 }
        let http = ScriptedHTTP { server.handle($0) }
        var job = Job(id: JobID(1), spec: JobSpec(source: "/a.bin", destination: Self.endpoint), createdAt: Date())
        job.checkpoint = Checkpoint(TusCheckpoint(uploadURL: "\(Self.endpoint)3", expires: nil))
        let target = ResolvedTarget(uploadProtocol: .tus, url: Self.endpoint, fileName: "a.bin")
        try await TusTransfer(http: http).discardPartialUpload(job, target: target)
        #expect(server.state.withLock { $0.uploads.isEmpty })
        try await TusTransfer(http: http).discardPartialUpload(job, target: target)
        #expect(
            http.requests == [
                "OPTIONS \(Self.endpoint)", "DELETE \(Self.endpoint)3", "OPTIONS \(Self.endpoint)",
                "DELETE \(Self.endpoint)3",
            ])
    }
}

/// The chunked block protocol when an acknowledgement is lost: the block was stored, its answer
/// never came, and the next attempt sends that block again (the server takes it again by its
/// sequence number) and goes on.
@Suite("chunked: a lost acknowledgement")
struct ChunkedAnswerTests {
    static let url = "http://127.0.0.1:1/upload"

    /// The `sequenceNo` field of a block request (0 for the init); nil when it is not multipart.
    static func sequenceNumber(of request: HTTPRequest) -> Int? {
        guard case .multipart(let parts) = request.body else { return nil }
        return parts.lazy.compactMap { part -> Int? in
            if case .field("sequenceNo", let value) = part { return Int(value) }
            return nil
        }.first ?? -1
    }

    @Test func theUnacknowledgedBlockIsSentAgainAndTheUploadGoesOn() async throws {
        let bench = try TransferBench(size: 35)
        let stored = Mutex<[Int]>([])
        let loseAnswerTo = Mutex<Int?>(2)
        let http = ScriptedHTTP { request in
            guard let sequence = Self.sequenceNumber(of: request) else { return ScriptedHTTP.answer(400) }
            if sequence == 0 { return ScriptedHTTP.answer(200, body: #"{"code":0,"data":{"upToken":"T1"}}"#) }
            stored.withLock { $0.append(sequence) }
            if loseAnswerTo.withLock({ lost in
                defer { if lost == sequence { lost = nil } }; return lost == sequence
            }) {
                throw TransferFailure.network("connection reset by peer")
            }
            let last = sequence == 4
            return ScriptedHTTP.answer(
                200, body: last ? #"{"code":0,"data":{"fileUrl":"http://127.0.0.1:1/f/a.bin"}}"# : #"{"code":0}"#)
        }
        let first = bench.context(.chunked, url: Self.url, chunkSize: 10)
        await #expect(throws: TransferFailure.self) { try await ChunkedTransfer(http: http).upload(first) }
        #expect(bench.commits.entries.map(\.acked) == [0, 10], "the init, then block 1 only")

        // The next attempt starts from the journaled checkpoint: one block acknowledged.
        let second = bench.context(
            .chunked, url: Self.url, chunkSize: 10,
            checkpoint: Checkpoint(ChunkedCheckpoint(upToken: "T1", blockSize: 10, blocksAcknowledged: 1)))
        let result = try await ChunkedTransfer(http: http).upload(second)
        #expect(result.url == "http://127.0.0.1:1/f/a.bin")
        #expect(stored.withLock { $0 } == [1, 2, 2, 3, 4], "block 2 again, then the rest")
        #expect(bench.commits.entries.map(\.acked).suffix(3) == [20, 30, 35])
    }

    /// Killed after the last block's acknowledgement was journaled, before the job's end was:
    /// the last block goes again, and its answer names the file (the crash loop found this).
    @Test func everyBlockAcknowledgedSendsTheLastAgainForTheFilesURL() async throws {
        let bench = try TransferBench(size: 35)
        let stored = Mutex<[Int]>([])
        let http = ScriptedHTTP { request in
            guard let sequence = Self.sequenceNumber(of: request) else { return ScriptedHTTP.answer(400) }
            stored.withLock { $0.append(sequence) }
            return ScriptedHTTP.answer(200, body: #"{"code":0,"data":{"fileUrl":"http://127.0.0.1:1/f/a.bin"}}"#)
        }
        let resumed = bench.context(
            .chunked, url: Self.url, chunkSize: 10,
            checkpoint: Checkpoint(ChunkedCheckpoint(upToken: "T1", blockSize: 10, blocksAcknowledged: 4)))
        let result = try await ChunkedTransfer(http: http).upload(resumed)
        #expect(result.url == "http://127.0.0.1:1/f/a.bin")
        #expect(stored.withLock { $0 } == [4], "only the last block, again")

        let impossible = bench.context(
            .chunked, url: Self.url, chunkSize: 10,
            checkpoint: Checkpoint(ChunkedCheckpoint(upToken: "T1", blockSize: 10, blocksAcknowledged: 5)))
        await #expect(throws: TransferFailure.self) { try await ChunkedTransfer(http: http).upload(impossible) }
        #expect(stored.withLock { $0 } == [4], "nothing sent for an impossible checkpoint")
    }
}

/// The protocol tables agree: every protocol but auto has a Transfer, and auto settles an http
/// destination by asking the server.
@Suite("Protocols: one table in the core, one registry in the daemon")
struct TransferRegistryTests {
    @Test func everyProtocolButAutoHasATransferAndADestination() throws {
        #expect(TransferRegistry.supportedProtocols == UploadProtocol.allCases.filter { $0 != .auto })
        for uploadProtocol in UploadProtocol.allCases {
            #expect(!uploadProtocol.traits.destinations.isEmpty, "\(uploadProtocol)")
            #expect(!uploadProtocol.traits.summary.isEmpty, "\(uploadProtocol)")
            if uploadProtocol != .auto {
                _ = try TransferRegistry.transfer(for: uploadProtocol, http: NoHTTP())
            }
        }
        #expect(throws: TransferFailure.self) { try TransferRegistry.transfer(for: .auto, http: NoHTTP()) }
    }

    @Test func autoAsksAnHttpServerAndFallsBackToPut() async throws {
        let target = ResolvedTarget(uploadProtocol: .auto, url: "http://127.0.0.1:1/up/", fileName: "a.bin")
        let tus = ScriptedHTTP { _ in ScriptedHTTP.answer(204, ["Tus-Resumable": "1.0.0"]) }
        let (chosen, why) = try await TransferRegistry.resolveAuto(http: tus, target: target)
        #expect(chosen == .tus && why == "the server answered OPTIONS with Tus-Resumable: uploading with tus")
        let plain = ScriptedHTTP { _ in ScriptedHTTP.answer(404) }
        let (fallback, because) = try await TransferRegistry.resolveAuto(http: plain, target: target)
        #expect(fallback == .put && because == "the server answered OPTIONS with HTTP 404: uploading with put")
        let unreachable = ScriptedHTTP { _ in throw TransferFailure.network("connection refused") }
        await #expect(throws: TransferFailure.self) {
            try await TransferRegistry.resolveAuto(http: unreachable, target: target)
        }
        // Remembered: the same URL is asked once.
        let answers = ProbeAnswers()
        _ = try await TransferRegistry.resolveAuto(http: tus, target: target, remembering: answers)
        let (again, said) = try await TransferRegistry.resolveAuto(http: plain, target: target, remembering: answers)
        #expect(again == .tus && said.hasSuffix("(asked for an earlier file)"))
    }
}
