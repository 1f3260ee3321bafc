import Foundation
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

/// Issue 48: servers cap a request's body (nginx's client_max_body_size, 1 MiB by default, in front
/// of the server: 413; Django's DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MiB: a bare 400). For a chunked
/// protocol that is the chunk, not the file: it is halved down to a floor, sent again, and the size
/// is remembered for the origin. Each test has an origin of its own (the memory is the daemon's).
@Suite("Chunks a server refuses as too large")
struct ChunkRefusalTests {
    static let kibibyte: Int64 = 1 << 10
    static let mebibyte: Int64 = 1 << 20
    /// nginx's answer to a body over client_max_body_size.
    static let nginx413 = ScriptedHTTP.answer(
        413,
        body:
            "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    )
    /// Django's answer (DEBUG off) to a body over DATA_UPLOAD_MAX_MEMORY_SIZE: no reason given.
    static let django400 = ScriptedHTTP.answer(
        400,
        body:
            "<!doctype html>\n<html lang=\"en\">\n<head>\n  <title>Bad Request (400)</title>\n</head>\n<body>\n  <h1>Bad Request (400)</h1><p></p>\n</body>\n</html>\n"
    )

    func tusServer(port: Int, limit: Int64, answer: HTTPResponse) -> TusAnswerTests.Server {
        let server = TusAnswerTests.Server(endpoint: "http://127.0.0.1:\(port)/files/")
        server.state.withLock { $0.bodyLimit = (limit, answer) }
        return server
    }

    @Test func aTusChunkRefusedWith413IsHalvedUntilItGoesThroughAndTheSizeIsRemembered() async throws {
        let server = tusServer(port: 41_301, limit: 300 * Self.kibibyte, answer: Self.nginx413)
        let (result, http, bench) = try await TusAnswerTests().upload(
            server, size: Int(Self.mebibyte), chunk: Self.mebibyte)
        #expect(try result.get().status == 204, "\(result)")
        #expect(server.state.withLock { $0.refused } == [Self.mebibyte, 512 * Self.kibibyte])
        #expect(server.state.withLock { $0.uploads[server.endpoint + "1"] } == Self.mebibyte)
        let patches = http.requests.filter { $0.hasPrefix("PATCH") }.map { $0.split(separator: "@").last ?? "" }
        #expect(patches == ["0", "0", "0", "262144", "524288", "786432"], "the refused chunk again, smaller")
        let notes = bench.notes.withLock { $0 }
        #expect(notes.contains("the server refused a chunk of 1 MiB (HTTP 413); trying 512 KiB"), "\(notes)")
        #expect(notes.contains("the server refused a chunk of 512 KiB (HTTP 413); trying 256 KiB"), "\(notes)")
        #expect(notes.contains { $0.contains("set --chunk-size 256K") && $0.contains("chunk_size") }, "\(notes)")

        // The next upload to that server starts with chunks it takes.
        let (again, _, nextBench) = try await TusAnswerTests().upload(
            server, size: Int(Self.mebibyte), chunk: Self.mebibyte)
        #expect(try again.get().status == 204)
        #expect(server.state.withLock { $0.refused.count } == 2, "nothing refused the second time")
        #expect(nextBench.notes.withLock { $0 }.contains { $0.contains("sending chunks of 256 KiB") })
    }

    @Test func djangosBare400IsAChunkTooLargeAndTheUploadGoesOn() async throws {
        let server = tusServer(port: 41_302, limit: 5 * Self.mebibyte / 2, answer: Self.django400)
        let size = 3 * Self.mebibyte
        let (result, _, bench) = try await TusAnswerTests().upload(server, size: Int(size), chunk: 8 * Self.mebibyte)
        #expect(try result.get().status == 204, "\(result)")
        #expect(server.state.withLock { $0.refused } == [size])
        #expect(server.state.withLock { $0.uploads[server.endpoint + "1"] } == size)
        #expect(bench.notes.withLock { $0 }.contains("the server refused a chunk of 3 MiB (HTTP 400); trying 1.50 MiB"))
    }

    /// A 400 that gives another reason is the request's fault: no halving, and the server's words.
    @Test func a400ForAnotherReasonFailsAtOnce() async throws {
        let server = tusServer(
            port: 41_303, limit: 0, answer: ScriptedHTTP.answer(400, body: "Upload-Offset header is invalid"))
        let (result, _, _) = try await TusAnswerTests().upload(server, size: Int(Self.mebibyte), chunk: Self.mebibyte)
        guard case .failure(let failure as TransferFailure) = result else { Issue.record("\(result)"); return }
        #expect(server.state.withLock { $0.refused } == [Self.mebibyte], "sent once")
        #expect(!failure.retryable)
        #expect(failure.error.message.contains("Upload-Offset header is invalid"))
    }

    /// At the floor the job fails, naming the chunk and what to change, not the file's size.
    @Test func aChunkRefusedAtTheFloorFailsNamingTheChunkAndTheSetting() async throws {
        let server = tusServer(port: 41_304, limit: 100 * Self.kibibyte, answer: Self.nginx413)
        let (result, _, _) = try await TusAnswerTests().upload(server, size: Int(Self.mebibyte), chunk: Self.mebibyte)
        guard case .failure(let failure as TransferFailure) = result else { Issue.record("\(result)"); return }
        #expect(server.state.withLock { $0.refused } == [Self.mebibyte, 512 * Self.kibibyte, 256 * Self.kibibyte])
        #expect(!failure.retryable)
        #expect(failure.error.status == 413)
        let message = failure.error.message
        #expect(message.contains("refuses even a chunk of 256 KiB"), "\(message)")
        #expect(message.contains("client_max_body_size") && message.contains("--chunk-size"), "\(message)")
        #expect(!message.contains("a file this large"), "\(message)")
    }

    /// A PATCH answered 410 forgets the upload before the attempt fails, so the next attempt makes
    /// a new one: django-tus answered HEAD 200 and every PATCH 410, and resuming the same upload
    /// again made a loop of hundreds of attempts, each counted as progress.
    @Test func aPatchAnswered410ForgetsTheUploadForTheNextAttempt() async throws {
        let bench = try TransferBench(size: 100)
        let endpoint = "http://127.0.0.1:41307/files/"
        let http = ScriptedHTTP { request in
            switch request.method {
            case "OPTIONS":
                return ScriptedHTTP.answer(204, ["Tus-Resumable": "1.0.0", "Tus-Extension": "creation"])
            case "HEAD": return ScriptedHTTP.answer(200, ["Upload-Offset": "0", "Upload-Length": "100"])
            default: return ScriptedHTTP.answer(410)
            }
        }
        let saved = Checkpoint(TusCheckpoint(uploadURL: "\(endpoint)7", expires: nil))
        let failure = await #expect(throws: TransferFailure.self) {
            try await TusTransfer(http: http).upload(bench.context(.tus, url: endpoint, checkpoint: saved))
        }
        #expect(failure?.retryable == true)
        #expect(failure?.error.message.contains("the next attempt starts a new one") == true)
        #expect(bench.commits.entries.last == CommitLog.Entry(acked: 0, durable: true), "\(bench.commits.entries)")
    }

    /// A 413 to the creation (which has no body) is about the file: Tus-Max-Size names the limit.
    @Test func a413ToTheCreationNamesTusMaxSize() async throws {
        let bench = try TransferBench(size: 100)
        let http = ScriptedHTTP { request in
            switch request.method {
            case "OPTIONS":
                return ScriptedHTTP.answer(204, ["Tus-Resumable": "1.0.0", "Tus-Extension": "creation"])
            default: return ScriptedHTTP.answer(413, ["Tus-Resumable": "1.0.0", "Tus-Max-Size": "64"])
            }
        }
        let failure = await #expect(throws: TransferFailure.self) {
            try await TusTransfer(http: http).upload(bench.context(.tus, url: "http://127.0.0.1:41305/files/"))
        }
        #expect(failure?.error.message.contains("at most 64 bytes (Tus-Max-Size); the file has 100") == true)
    }

    /// A failed job's upload is terminated when the server offers termination; a server without it,
    /// or one that lists it but answers 405 (django-tus), keeps it, and that is no error to retry.
    @Test(arguments: [
        ("creation", 204, false), ("creation,termination", 405, true), ("creation,termination", 204, true),
    ])
    func aDiscardDeletesOnlyWhereTheServerTerminates(extensions: String, deleteStatus: Int, deletes: Bool)
        async throws
    {
        let endpoint = "http://127.0.0.1:41306/files/"
        let http = ScriptedHTTP { request in
            switch request.method {
            case "OPTIONS": return ScriptedHTTP.answer(204, ["Tus-Resumable": "1.0.0", "Tus-Extension": extensions])
            default: return ScriptedHTTP.answer(deleteStatus)
            }
        }
        var job = Job(id: JobID(1), spec: JobSpec(source: "/a.bin", destination: endpoint), createdAt: Date())
        job.checkpoint = Checkpoint(TusCheckpoint(uploadURL: "\(endpoint)9", expires: nil))
        let target = ResolvedTarget(uploadProtocol: .tus, url: endpoint, fileName: "a.bin")
        try await TusTransfer(http: http).discardPartialUpload(job, target: target)
        #expect(http.requests.contains("DELETE \(endpoint)9") == deletes, "\(http.requests)")
    }

    /// The block protocol: every block has the size its init named, so a refused block begins a
    /// new upload with blocks of half the size.
    @Test func aRefusedBlockStartsANewUploadWithHalfSizedBlocks() async throws {
        let bench = try TransferBench(size: Int(Self.mebibyte))
        let inits = Mutex<[String]>([])
        let stored = Mutex<[(token: String, sequence: Int, length: Int64)]>([])
        let http = ScriptedHTTP { request in
            guard case .multipart(let parts) = request.body else { return ScriptedHTTP.answer(400) }
            var fields: [String: String] = [:]
            var length: Int64 = 0
            for part in parts {
                switch part {
                case .field(let name, let value): fields[name] = value
                case .file(_, _, _, let region): length = region.length
                }
            }
            if fields["sequenceNo"] == "0" {
                let token = "T\(inits.withLock { $0.append(fields["blockSize"] ?? ""); return $0.count })"
                return ScriptedHTTP.answer(200, body: #"{"code":0,"data":{"upToken":"\#(token)"}}"#)
            }
            if length > 300 * Self.kibibyte { return Self.nginx413 }
            let sequence = Int(fields["sequenceNo"] ?? "") ?? -1
            stored.withLock { $0.append((fields["upToken"] ?? "", sequence, length)) }
            let last = Int64(sequence) * 256 * Self.kibibyte >= Self.mebibyte
            return ScriptedHTTP.answer(
                200, body: last ? #"{"code":0,"data":{"fileUrl":"http://127.0.0.1:41307/f/a.bin"}}"# : #"{"code":0}"#)
        }
        let context = bench.context(.chunked, url: "http://127.0.0.1:41307/upload", chunkSize: Self.mebibyte)
        let result = try await ChunkedTransfer(http: http).upload(context)
        #expect(result.url == "http://127.0.0.1:41307/f/a.bin")
        #expect(inits.withLock { $0 } == ["1048576", "524288", "262144"], "a new upload for each size")
        #expect(stored.withLock { $0.map(\.token) } == ["T3", "T3", "T3", "T3"])
        #expect(stored.withLock { $0.map(\.sequence) } == [1, 2, 3, 4])
        let notes = bench.notes.withLock { $0 }
        #expect(notes.contains { $0.hasPrefix("the server refused a chunk of 1 MiB (HTTP 413); trying 512 KiB") })
        #expect(notes.contains { $0.contains("set --chunk-size 256K") })
    }

    @Test func theMemoryKeepsTheSmallestSizePerOrigin() {
        let memory = ChunkSizeMemory()
        #expect(memory.largest(for: "http://a.example/x") == nil)
        memory.remember(4 << 20, for: "http://a.example/files/")
        memory.remember(8 << 20, for: "http://A.example:80/other")
        #expect(memory.largest(for: "http://a.example/y") == 4 << 20, "same origin, the smaller size")
        #expect(memory.largest(for: "https://a.example/y") == nil, "another origin")
        for index in 0..<ChunkSizeMemory.capacity { memory.remember(1 << 20, for: "http://h\(index).example/") }
        #expect(memory.largest(for: "http://a.example/") == nil, "the oldest origin went first")
    }

    @Test func whatCountsAsABodyTooLarge() {
        #expect(ChunkRefusal.refusesBody(Self.nginx413, bareBadRequest: false))
        #expect(ChunkRefusal.refusesBody(Self.django400, bareBadRequest: true))
        #expect(!ChunkRefusal.refusesBody(Self.django400, bareBadRequest: false), "a bare 400 only for tus")
        let said = ScriptedHTTP.answer(400, body: "RequestDataTooBig: Request body exceeded settings")
        #expect(ChunkRefusal.refusesBody(said, bareBadRequest: false))
        #expect(!ChunkRefusal.refusesBody(ScriptedHTTP.answer(400, body: "missing upToken"), bareBadRequest: true))
        #expect(!ChunkRefusal.refusesBody(ScriptedHTTP.answer(500), bareBadRequest: true))
        #expect(ChunkRefusal.halved(8 << 20) == 4 << 20)
        #expect(ChunkRefusal.halved(300 << 10) == ChunkRefusal.floor)
        #expect(ChunkRefusal.halved(ChunkRefusal.floor) == nil)
        #expect(ChunkRefusal.option(1 << 20) == "1M" && ChunkRefusal.option(768 << 10) == "768K")
        #expect(ChunkRefusal.option(1_000) == "1000")
    }
}
