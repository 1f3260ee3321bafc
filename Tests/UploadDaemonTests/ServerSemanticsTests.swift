import Foundation
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

/// Issue 48 without a socket: the folders of a PUT on any WebDAV server, a probe that cannot hang,
/// RFC 9110's 417, 303 and 307/308 (`HTTPSemantics`), and servers that never answer 100 Continue.
@Suite("Servers as users have them")
struct ServerSemanticsTests {
    static let url = "http://127.0.0.1:1/dav/new/a.bin"

    /// A WebDAV server whose folder `/dav/new/` is missing until MKCOL makes it; a PUT into a
    /// missing folder gets `missingStatus`.
    final class FolderServer: Sendable {
        let missingStatus: Int
        let made = Mutex(Set(["http://127.0.0.1:1/dav/"]))
        init(missingStatus: Int) { self.missingStatus = missingStatus }

        func answer(_ request: HTTPRequest) -> HTTPResponse {
            let folder = WebDAVCollections.ancestors(of: request.url).first ?? ""
            let exists = made.withLock { $0.contains(request.url) || $0.contains(folder) }
            switch request.method {
            case "PUT": return ScriptedHTTP.answer(exists ? 201 : missingStatus)
            case "PROPFIND": return ScriptedHTTP.answer(made.withLock { $0.contains(request.url) } ? 207 : 404)
            case "MKCOL":
                if made.withLock({ $0.contains(request.url) }) { return ScriptedHTTP.answer(405) }
                guard made.withLock({ $0.contains(folder) }) else { return ScriptedHTTP.answer(409) }
                made.withLock { _ = $0.insert(request.url) }
                return ScriptedHTTP.answer(201)
            default: return ScriptedHTTP.answer(405)
            }
        }
    }

    func put(_ server: ScriptedHTTP, url: String = Self.url) async throws -> Result<JobResult, TransferFailure> {
        let bench = try TransferBench(size: 100)
        do {
            return .success(try await PutTransfer(http: server).upload(bench.context(.put, url: url)))
        } catch let failure as TransferFailure {
            return .failure(failure)
        }
    }

    @Test(arguments: [404, 409, 424, 500])
    func aPutIntoAMissingFolderMakesItAndIsSentOnceMore(status: Int) async throws {
        let folders = FolderServer(missingStatus: status)
        let server = ScriptedHTTP { folders.answer($0) }
        let url = "http://127.0.0.1:1/dav/s\(status)-\(UUID().uuidString.prefix(6))/a.bin"
        let result = try await put(server, url: url)
        #expect(try result.get().status == 201)
        let folder = WebDAVCollections.ancestors(of: url)[0]
        #expect(server.requests == ["PUT \(url)", "PROPFIND \(folder)", "MKCOL \(folder)", "PUT \(url)"])
    }

    /// Two PUTs side by side into one new folder both get the "missing" answer, and the other
    /// job's MKCOL lands right after this job's `request`:
    /// - after its PROPFIND saw the folder missing: this job finds nothing left to make and still
    ///   sends its file again;
    /// - after its PUT was refused, before its PROPFIND: the folder is there when asked. The 409
    ///   said it was missing when the PUT came, so the file goes again, and nothing is made
    ///   (WsgiDAV under the ASan build of the everyday folder test: "PUT parent must be a
    ///   collection").
    @Test(arguments: ["PROPFIND", "PUT"])
    func aFolderMadeMeanwhileByAnotherJobStillGetsThePutAgain(landingAfter request: String) async throws {
        let folders = FolderServer(missingStatus: 409)
        let url = "http://127.0.0.1:1/dav/race-\(UUID().uuidString.prefix(6))/a.bin"
        let folder = WebDAVCollections.ancestors(of: url)[0]
        let server = ScriptedHTTP { sent in
            let answer = folders.answer(sent)
            if sent.method == request { folders.made.withLock { _ = $0.insert(folder) } }
            return answer
        }
        let result = try await put(server, url: url)
        #expect(try result.get().status == 201)
        let made = request == "PROPFIND" ? ["MKCOL \(folder)"] : []
        #expect(server.requests == ["PUT \(url)", "PROPFIND \(folder)"] + made + ["PUT \(url)"])
    }

    /// nginx answers 500 to a PUT into a missing folder. When another job of this daemon made the
    /// folder after this PUT was sent, the folder is found there and the PUT goes again; a folder
    /// that was known before the PUT leaves the 500 standing.
    @Test func aFolderAnotherJobMadeAfterThePutWasSentIsToldFromOneThatWasThere() async throws {
        let folders = FolderServer(missingStatus: 500)
        let server = ScriptedHTTP { folders.answer($0) }
        let tag = UUID().uuidString.prefix(6)
        let url = "http://127.0.0.1:1/dav/late-\(tag)/a.bin"
        let target = ResolvedTarget(uploadProtocol: .put, url: url, fileName: "a.bin")
        let collections = WebDAVCollections(http: server)

        let sentAt = WebDAVCollections.moment()
        #expect(try await collections.createParents(of: "http://127.0.0.1:1/dav/late-\(tag)/b.bin", target: target))
        #expect(
            try await collections.parentState(of: url, target: target, putStatus: 500, sentAt: sentAt) == .madeMeanwhile
        )

        let later = WebDAVCollections.moment()
        #expect(try await collections.parentState(of: url, target: target, putStatus: 500, sentAt: later) == .present)
    }

    /// helper-21's review: the server may make a folder before its MKCOL's answer comes back, so a
    /// folder counts from the moment its MKCOL is sent; and a PROPFIND that found it missing
    /// forgets only what was known before the PROPFIND was sent.
    @Test func aFolderCountsFromItsMKCOLAndAStaleMissDoesNotForgetItLater() {
        var known = WebDAVCollections.Known()
        let folder = "http://127.0.0.1:1/dav/x/"
        let putSent = known.moment
        let sent = known.tick()  // another job's MKCOL goes out
        known.beingMade[folder] = sent
        #expect(known.stamp(of: folder) > putSent, "a PROPFIND now finds it made meanwhile")
        let asked = known.moment  // a third job's PROPFIND, answered 404 before the MKCOL landed
        known.answered(folder, sent: sent, exists: true)
        known.forget([folder], askedAt: asked)
        #expect(known.folders[folder] != nil && known.beingMade[folder] == nil, "the MKCOL's answer stands")
        known.forget([folder], askedAt: known.moment)
        #expect(known.folders[folder] == nil, "a PROPFIND sent after it found it gone")
        let failed = known.tick()
        known.beingMade[folder] = failed
        known.answered(folder, sent: failed, exists: false)
        #expect(known.folders[folder] == nil && known.beingMade[folder] == nil)
    }

    /// A 500 (or a 404) from a server that shows the folder exists is not about the folder: it
    /// stands, and a 500 stays retryable. Nothing is made.
    @Test(arguments: [404, 500])
    func aFailureWhoseFolderExistsStands(status: Int) async throws {
        let server = ScriptedHTTP { request in
            ScriptedHTTP.answer(request.method == "PROPFIND" ? 207 : status, body: "disk on fire")
        }
        let result = try await put(server)
        guard case .failure(let failure) = result else { Issue.record("succeeded"); return }
        #expect(failure.error.status == status)
        #expect(failure.retryable == (status == 500))
        #expect(server.requests.map { $0.split(separator: " ")[0] } == ["PUT", "PROPFIND"])
    }

    /// A server that keeps refusing the PUT after its folder was made: the PUT is sent twice, never more.
    @Test func itNeverLoops() async throws {
        let made = Mutex(false)
        let server = ScriptedHTTP { request in
            switch request.method {
            case "PROPFIND": return ScriptedHTTP.answer(made.withLock { $0 } ? 207 : 404)
            case "MKCOL":
                made.withLock { $0 = true }
                return ScriptedHTTP.answer(201)
            default: return ScriptedHTTP.answer(404)
            }
        }
        let result = try await put(server, url: "http://127.0.0.1:1/dav/loop-\(UUID().uuidString.prefix(6))/a.bin")
        guard case .failure(let failure) = result else { Issue.record("succeeded"); return }
        #expect(failure.error.status == 404)
        #expect(server.requests.filter { $0.hasPrefix("PUT") }.count == 2, "\(server.requests)")
    }

    /// No PROPFIND, no `DAV` header: a 404 is the server's last word; nothing is made.
    @Test func aServerThatIsNotWebDAVGetsNoMKCOL() async throws {
        let server = ScriptedHTTP { request in ScriptedHTTP.answer(request.method == "PUT" ? 404 : 405) }
        let result = try await put(server)
        guard case .failure(let failure) = result else { Issue.record("succeeded"); return }
        #expect(failure.error.status == 404)
        #expect(!server.requests.contains { $0.hasPrefix("MKCOL") }, "\(server.requests)")
    }

    // MARK: The probe

    @Test func aProbeIsBoundedAndEndsAtTheHead() async throws {
        let seen = Mutex<HTTPRequest?>(nil)
        let server = ScriptedHTTP { request in
            seen.withLock { $0 = request }
            return ScriptedHTTP.answer(200)
        }
        let target = ResolvedTarget(uploadProtocol: .auto, url: "http://127.0.0.1:1/up/", fileName: "a.bin")
        _ = try await TransferRegistry.resolveAuto(http: server, target: target)
        let probe = try #require(seen.withLock { $0 })
        #expect(probe.headersOnly)
        #expect(probe.responseTimeout <= TransferRegistry.probeSeconds)
        #expect(probe.connectTimeout <= TransferRegistry.probeSeconds)
    }

    /// A probe the server does not answer in time falls back to PUT, and says so.
    @Test func aProbeThatTimesOutFallsBackToPut() async throws {
        let target = ResolvedTarget(uploadProtocol: .auto, url: "http://127.0.0.1:1/up/", fileName: "a.bin")
        let silent = ScriptedHTTP { _ in throw TransferFailure.timeout("OPTIONS: no complete answer") }
        let (chosen, why) = try await TransferRegistry.resolveAuto(http: silent, target: target)
        #expect(chosen == .put)
        #expect(why.contains("did not answer the tus probe within") && why.hasSuffix("uploading with put"), "\(why)")
    }

    // MARK: HTTPSemantics

    static func region(size: Int) throws -> (TransferBench, HTTPBody) {
        let bench = try TransferBench(size: size)
        return (bench, .file(FileRegion(file: bench.source, offset: 0, length: Int64(size))))
    }

    @Test func a417IsSentOnceMoreWithoutExpectAndTheOriginRemembered() async throws {
        let (_, body) = try Self.region(size: 2 << 20)
        let expects = Mutex<[String?]>([])
        let inner = ScriptedHTTP { request in
            let expect = request.headers.first { $0.name.lowercased() == "expect" }?.value
            expects.withLock { $0.append(expect) }
            return ScriptedHTTP.answer(expect == nil ? 417 : 201)
        }
        let http = HTTPSemantics(inner)
        let response = try await http.send(HTTPRequest(method: "PUT", url: Self.url, body: body))
        #expect(response.status == 201)
        #expect(expects.withLock { $0 } == [nil, ""])
        #expect(http.sendsWithoutExpect(to: "http://127.0.0.1:1/other"))
    }

    @Test func aSameOriginRedirectIsFollowedWithTheCredentials() async throws {
        let (_, body) = try Self.region(size: 1000)
        let inner = ScriptedHTTP { request in
            if request.url.hasSuffix("/old/a.bin") { return ScriptedHTTP.answer(307, ["Location": "/new/a.bin"]) }
            if request.url.hasSuffix("/mid/a.bin") { return ScriptedHTTP.answer(308, ["Location": "../old/a.bin"]) }
            return ScriptedHTTP.answer(request.credentials == nil ? 401 : 201)
        }
        var request = HTTPRequest(method: "PUT", url: "http://127.0.0.1:1/dav/mid/a.bin", body: body)
        request.credentials = BasicCredentials(user: "u", password: "p")
        let response = try await HTTPSemantics(inner).send(request)
        #expect(response.status == 201)
        #expect(response.redirectedURL == "http://127.0.0.1:1/new/a.bin")
        #expect(
            inner.requests == [
                "PUT http://127.0.0.1:1/dav/mid/a.bin", "PUT http://127.0.0.1:1/dav/old/a.bin",
                "PUT http://127.0.0.1:1/new/a.bin",
            ])
    }

    @Test func aCrossOriginRedirectOrAnEndlessOneIsHandedBack() async throws {
        let cross = ScriptedHTTP { _ in ScriptedHTTP.answer(307, ["Location": "http://127.0.0.2:1/a.bin"]) }
        let crossed = try await HTTPSemantics(cross).send(HTTPRequest(method: "PUT", url: Self.url))
        #expect(crossed.status == 307 && cross.requests.count == 1)
        let loop = ScriptedHTTP { _ in ScriptedHTTP.answer(308, ["Location": Self.url]) }
        let looped = try await HTTPSemantics(loop).send(HTTPRequest(method: "PUT", url: Self.url))
        #expect(looped.status == 308 && loop.requests.count == HTTPSemantics.maxRedirects + 1)
    }

    /// A big body answered without a 100 Continue first: later bodies to that origin go without `Expect`.
    @Test func anOriginThatNeverAnswers100IsSentBodiesWithoutExpect() async throws {
        let (_, body) = try Self.region(size: 2 << 20)
        let expects = Mutex<[String?]>([])
        let inner = ScriptedHTTP { request in
            expects.withLock { $0.append(request.headers.first { $0.name.lowercased() == "expect" }?.value) }
            var answer = ScriptedHTTP.answer(201)
            answer.statusLines = ["HTTP/1.1 201 Created"]
            return answer
        }
        let http = HTTPSemantics(inner)
        _ = try await http.send(HTTPRequest(method: "PUT", url: Self.url, body: body))
        _ = try await http.send(HTTPRequest(method: "PUT", url: Self.url, body: body))
        // A small body never carried Expect: nothing is added to it.
        _ = try await http.send(HTTPRequest(method: "PUT", url: Self.url, body: .bytes([1, 2, 3])))
        #expect(expects.withLock { $0 } == [nil, "", nil])
        // A server that answers 100 is not remembered.
        let polite = ScriptedHTTP { _ in
            var answer = ScriptedHTTP.answer(201)
            answer.statusLines = ["HTTP/1.1 100 Continue", "HTTP/1.1 201 Created"]
            return answer
        }
        let other = HTTPSemantics(polite)
        _ = try await other.send(HTTPRequest(method: "PUT", url: Self.url, body: body))
        #expect(!other.sendsWithoutExpect(to: Self.url))
    }

    // MARK: POST's 303

    @Test(arguments: [301, 302, 303])
    func aPostAnsweredWithARedirectIsASuccessWhoseLocationIsTheResult(status: Int) async throws {
        let bench = try TransferBench(size: 100)
        let server = ScriptedHTTP { _ in ScriptedHTTP.answer(status, ["Location": "/files/42"]) }
        let result = try await PostTransfer(http: server).upload(bench.context(.post, url: "http://127.0.0.1:1/up"))
        #expect(result.url == "http://127.0.0.1:1/files/42")
        #expect(result.status == status)
        #expect(server.requests == ["POST http://127.0.0.1:1/up"], "nothing fetched from the Location")
    }

    // MARK: Delete

    @Test(arguments: [(204, DeleteOutcome.deleted), (404, .absent(status: 404)), (410, .absent(status: 410))])
    func deleteSaysWhetherTheFileWasThere(status: Int, outcome: DeleteOutcome) async throws {
        let server = ScriptedHTTP { _ in ScriptedHTTP.answer(status) }
        let target = ResolvedTarget(uploadProtocol: .put, url: Self.url, fileName: "a.bin")
        let job = Job(id: JobID(1), spec: JobSpec(source: "/a.bin", destination: Self.url), createdAt: Date())
        #expect(try await PutTransfer(http: server).deleteFromServer(job, target: target) == outcome)
    }
}
