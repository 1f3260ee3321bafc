import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Issue 48's conformance suite (and issue 50's, in the same design): every protocol runs the same
/// cases against every server of its kind in the matrix of real servers in their default
/// configurations (contrib/test/servers.py writes matrix.json; `ServerMatrix`), and against the
/// scripted raw HTTP server (`ScriptedServer`) for the answers no friendly server gives.
///
/// A server added to the matrix is picked up with no change here: each case is a test whose
/// arguments are the matrix's servers. A protocol is one row of `Self.protocols`: what the suite
/// needs to know of it. What a server cannot do, the matrix says (auth, max_body, missing_folder,
/// layout, cannot_delete, defects), and the case expects that outcome, printed as
/// `conformance: SERVER CASE: expected-fail: why` or `skipped: why`; a case that passes prints
/// `pass`. A defect the matrix names that no longer shows is a failure too (`withKnownIssue`):
/// the matrix must then be corrected.
///
/// Each case has a daemon of its own, so the cases of independent servers run concurrently.
@Suite
struct ConformanceTests {
    // MARK: - What the suite knows of each protocol

    /// Where the destination's path goes on a server of a protocol.
    enum Folders: Sendable {
        /// New folders (or key prefixes) are made: the case uploads into new nested folders.
        case made
        /// The server has no folders (a form endpoint, a tus creation URL): the file goes to the URL.
        case none(String)
        /// The server answers a new folder with this status, and the protocol has no way to make one.
        case refused(Int, String)
    }

    /// One protocol's row: what the cases need to know to run it.
    struct ProtocolFacts: Sendable {
        /// uploadctl add --protocol.
        var name: String
        /// The file the upload cases send: several requests' worth where the protocol splits files.
        var fileSize: Int
        /// Added to the remote: a small chunk_size, so that the file goes in several requests.
        var remoteLines: [String]
        /// The whole file goes in one request, so a server's max_body caps the file.
        var oneRequest: Bool
        /// A daemon killed mid-upload continues from what the server holds (false: starts over).
        var resumes: Bool
        var folders: @Sendable (ServerMatrix.Server) -> Folders
        /// The scripted server can stand in for this protocol's server (its redirect scenarios).
        var scripted: Bool
    }

    static let chunk = 512 << 10

    /// The protocols, one row each. A protocol the matrix has and this table lacks fails
    /// `theMatrixHasEveryKindOfServer`.
    static let protocols: [String: ProtocolFacts] = [
        "put": ProtocolFacts(
            name: "put", fileSize: 3 << 20, remoteLines: [], oneRequest: true, resumes: false,
            folders: { _ in .made }, scripted: true),
        "post": ProtocolFacts(
            name: "post", fileSize: 3 << 20, remoteLines: [], oneRequest: true, resumes: false,
            folders: { server in
                if server.layout != "path" {
                    return .none("a form endpoint with no folders (layout \(server.layout))")
                }
                guard let status = server.missingFolder, status != 201 else { return .made }
                return .refused(status, "a POST into a new folder gets \(status), and a form upload cannot make one")
            }, scripted: true),
        "tus": ProtocolFacts(
            name: "tus", fileSize: 3 << 20, remoteLines: ["chunk_size = \(chunk)"], oneRequest: false, resumes: true,
            folders: { _ in .none("a tus server names its files") }, scripted: false),
        // S3 parts are at least 5 MiB but the last: three parts.
        "s3": ProtocolFacts(
            name: "s3", fileSize: 11 << 20, remoteLines: ["chunk_size = 5M", "multipart_threshold = 5M"],
            oneRequest: false, resumes: true, folders: { _ in .made }, scripted: false),
        "chunked": ProtocolFacts(
            name: "chunked", fileSize: 3 << 20, remoteLines: ["chunk_size = \(chunk)"], oneRequest: false,
            resumes: true, folders: { _ in .none("the block protocol's server names its files") }, scripted: false),
    ]

    // MARK: - The arguments

    /// A matrix server, named by its name in test output.
    struct Subject: Sendable, CustomTestStringConvertible {
        var server: ServerMatrix.Server
        var testDescription: String { server.name }
        var facts: ProtocolFacts { ConformanceTests.protocols[server.protocol]! }
    }

    /// Every matrix server whose protocol has a row (read when the tests are planned: the test
    /// command starts the servers first). None when the matrix is missing, which
    /// `theMatrixHasEveryKindOfServer` reports.
    static let subjects: [Subject] = {
        guard let matrix = try? ServerMatrix.load() else { return [] }
        return matrix.servers.filter { protocols[$0.protocol] != nil }.map { Subject(server: $0) }
    }()

    /// The scripted server's redirect scenarios, for every protocol it can stand in for.
    static let redirectScenarios: [String] = protocols.values.filter(\.scripted).map(\.name).sorted().flatMap { name in
        ["redirect-307", "redirect-308", "cross-307"].map { "\(name) \($0)" }
    }

    // MARK: - The matrix itself

    @Test func theMatrixHasEveryKindOfServer() throws {
        let matrix = try ServerMatrix.load()
        let unknown = matrix.servers.filter { Self.protocols[$0.protocol] == nil }
        #expect(
            unknown.isEmpty,
            "protocols without a row in ConformanceTests.protocols: \(unknown.map { "\($0.name) (\($0.protocol))" })")
        func count(_ name: String) -> Int { matrix.servers(protocol: name).count }
        #expect(count("put") >= 3 && matrix.servers(protocol: "put").contains { $0.name == "nginx-stock" })
        #expect(count("post") >= 2 && count("tus") >= 2 && count("s3") >= 2 && count("chunked") >= 1)
        #expect(Self.subjects.count == matrix.servers.count, "the suite's arguments are the matrix")
        for server in matrix.servers {
            print("conformance matrix: \(server.name) | \(server.software) | \(server.version) | \(server.protocol)")
        }
    }

    // MARK: - The cases

    /// A file big enough for several requests into new nested folders (a/b/), its bytes checked
    /// where the server keeps them. A server whose limit the file passes refuses it in the words
    /// its matrix entry gives; a file it takes then goes where it can.
    @Test(arguments: subjects)
    func freshUploadIntoNewFolders(_ subject: Subject) throws {
        let bench = try Bench(subject, "fresh")
        defer { bench.stop() }
        let server = subject.server
        let source = try bench.file("fresh.bin", size: subject.facts.fileSize)
        var refusals: [(status: Int, why: String)] = []
        if case .refused(let status, let why) = subject.facts.folders(server) { refusals.append((status, why)) }
        if subject.facts.oneRequest, let max = server.maxBody, Int64(subject.facts.fileSize) > max {
            // nginx-stock: client_max_body_size 1m; php-upload: upload_max_filesize 2M.
            refusals.append(
                (
                    server.maxBodyStatus ?? 413,
                    "it takes bodies up to \(max) bytes (HTTP \(server.maxBodyStatus ?? 413))"
                ))
        }
        let job = try bench.upload(source, to: bench.folder)
        guard !refusals.isEmpty else {
            let outcome = try bench.expectCompleted(job, source: source, path: bench.folder, attempts: 1)
            bench.report("\(outcome) (\(bench.requestsWords(job)); folders: \(bench.folderWords))")
            return
        }
        try #require(job.state == .failed, "\(server.name): \(String(describing: job.error))")
        let status = job.error?.status ?? 0
        try #require(refusals.contains { $0.status == status }, "\(server.name): \(String(describing: job.error))")
        try #require(job.error?.message.contains("HTTP \(status)") == true, "\(String(describing: job.error))")
        // What the server does take: a file within its limit, into the folders it can have.
        let size = min(subject.facts.fileSize, Int(server.maxBody ?? Int64.max) / 2)
        let within = try bench.file("within.bin", size: size)
        var folder = bench.folder
        if case .refused(let status, _) = subject.facts.folders(server) {
            // Within the limit, the new folders are what the server refuses.
            let refused = try bench.upload(within, to: folder)
            try #require(refused.state == .failed && refused.error?.status == status, "\(refused)")
            folder = ""
        }
        let taken = try bench.upload(within, to: folder)
        let outcome = try bench.expectCompleted(taken, source: within, path: folder, attempts: 1)
        let message = job.error?.message ?? ""
        let said = message.range(of: "HTTP \(status)").map { message[$0.lowerBound...] } ?? message[...]
        bench.report(
            "expected-fail: \(refusals.map(\.why).joined(separator: "; ")) (uploadd: \(said.prefix(150))); "
                + "\(size) bytes into \(folder.isEmpty ? "its own folder" : folder): \(outcome)")
    }

    /// uploadd killed with SIGKILL mid-upload (held mid-way by `uploadctl limit`), started again:
    /// the job completes, byte for byte; a resumable protocol goes on from what the server has.
    @Test(arguments: subjects)
    func killedMidUploadThenRestarted(_ subject: Subject) throws {
        let bench = try Bench(subject, "kill9")
        defer { bench.stop() }
        let server = subject.server
        var size = subject.facts.fileSize
        var note = ""
        if subject.facts.oneRequest, let max = server.maxBody, Int64(size) > max {
            size = Int(max) * 3 / 4
            note = " (\(size) bytes: it takes bodies up to \(max))"
        }
        let folder = bench.foldersRefused ? "" : bench.folder
        let source = try bench.file("killed.bin", size: size)
        let daemon = bench.daemon
        // Six seconds for the whole file: killed after a third of it.
        #expect(try daemon.ctl(["limit", "\(max(size / 6, 16 << 10))"]).status == 0)
        let id = try daemon.add([source], to: "s:\(folder)")[0]
        var before: JobInfo?
        let midway = try eventually(timeout: 60) {
            let job = try daemon.job(id)
            before = job
            if job.state.isTerminal { return true }
            let sent = max(job.bytesSent, job.bytesAcked) >= Int64(size / 3)
            return sent && (!subject.facts.resumes || job.bytesAcked > 0)
        }
        let killedAt = try #require(before)
        try #require(midway && !killedAt.state.isTerminal, "not killed mid-upload: \(killedAt)")
        daemon.crash()
        try daemon.start()
        #expect(try daemon.ctl(["limit", "\(max(size / 2, 16 << 10))"]).status == 0)
        var lowestAcked = Int64.max
        var last = killedAt
        let ended = try eventually(timeout: 90) {
            last = try daemon.job(id)
            lowestAcked = min(lowestAcked, last.bytesAcked)
            return last.state.isTerminal
        }
        try #require(ended, "\(last)\n\(daemon.log(tail: 20))")
        let history = last.history?.map(\.message) ?? []
        var how = "started over"
        if subject.facts.resumes {
            // The journaled checkpoint was kept and the server's part of the upload used.
            try #require(lowestAcked > 0, "\(server.name): started over after the restart: \(history)")
            try #require(
                !history.contains { $0.contains("starting over") || $0.contains("starting a new one") },
                "\(server.name): \(history)")
            how = "resumed (\(killedAt.bytesAcked) bytes acknowledged when killed, never fewer after)"
        }
        let outcome: String
        if let why = server.defects?["truncated-kept"] {
            outcome = try bench.expectTruncatedKept(last, source: source, path: folder, why: why)
        } else {
            outcome = try bench.expectCompleted(last, source: source, path: folder, attempts: nil)
        }
        bench.report("\(outcome): killed at \(killedAt.bytesSent) of \(size) bytes, \(how)\(note)")
    }

    /// A wrong password, token or secret: the job fails in one attempt, and its message says to
    /// check the credentials.
    @Test(arguments: subjects)
    func wrongPasswordFailsInOneAttempt(_ subject: Subject) throws {
        let server = subject.server
        guard server.checksCredentials else {
            // tus servers without auth; moto, which takes any key.
            Bench.report(subject, "wrong password", "skipped: auth \(server.auth): it takes any credentials")
            return
        }
        let bench = try Bench(subject, "wrong password")
        defer { bench.stop() }
        let source = try bench.file("wrong.bin", size: 256 << 10)
        let folder = bench.foldersRefused ? "" : bench.folder
        let id = try bench.daemon.add([source], to: "wrong:\(folder)")[0]
        let job = try bench.daemon.waitFor(id, timeout: 60)
        let message = job.error?.message ?? ""
        try #require(job.state == .failed, "\(server.name): \(job)")
        try #require(job.attempts == 1, "\(server.name): \(job.attempts) attempts: \(message)")
        try #require([401, 403].contains(job.error?.status ?? 0), "\(server.name): \(message)")
        try #require(message.contains("credentials") || message.contains("password"), "\(server.name): \(message)")
        bench.report("pass: \(message.prefix(160))")
    }

    /// `uploadctl delete`: the file is gone from the server, or, where the matrix says the server
    /// cannot delete it, a clear refusal and the file left as it was.
    @Test(arguments: subjects)
    func deleteRemovesTheUpload(_ subject: Subject) throws {
        let bench = try Bench(subject, "delete")
        defer { bench.stop() }
        let server = subject.server
        let source = try bench.file("deleted.bin", size: 256 << 10)
        let folder = bench.foldersRefused ? "" : bench.folder
        let job = try bench.upload(source, to: folder)
        _ = try bench.expectCompleted(job, source: source, path: folder, attempts: 1)
        let stored = try bench.stored(job, name: (source as NSString).lastPathComponent, path: folder)
        let delete = try bench.daemon.ctl(["delete", "\(job.id)"])
        if let why = server.cannotDelete {
            try #require(delete.status != 0, "\(server.name): \(delete)")
            try #require(delete.stderr.contains("delete failed"), "\(server.name): \(delete)")
            try #require(try stored.sha256() == Command.sha256(source), "\(server.name): the file is left as it was")
            bench.report("expected-fail: \(why); uploadctl says: \(delete.stderr.trimmingCharacters(in: .newlines))")
            return
        }
        try #require(delete.status == 0, "\(server.name): \(delete)")
        try #require(!delete.stdout.contains("not on the server"), "\(server.name): \(delete)")
        try #require(try stored.sha256() == nil, "\(server.name): still on the server after delete: \(stored)")
        bench.report("pass: \(delete.stdout.trimmingCharacters(in: .newlines))")
    }

    /// `remotes --test`: ok with the right credentials, refused with wrong ones.
    @Test(arguments: subjects)
    func remotesTestTellsRightFromWrongCredentials(_ subject: Subject) throws {
        let bench = try Bench(subject, "remotes --test")
        defer { bench.stop() }
        let server = subject.server
        let right = try bench.daemon.ctl(["remotes", "--test", "s"], timeout: 60)
        try #require(right.status == 0 && right.stdout.hasPrefix("s: ok: "), "\(server.name): \(right)")
        guard server.checksCredentials else {
            bench.report("pass (right); wrong skipped: auth \(server.auth): it takes any credentials")
            return
        }
        let wrong = try bench.daemon.ctl(["remotes", "--test", "wrong"], timeout: 60)
        try #require(wrong.status == 1, "\(server.name): \(wrong)")
        try #require(
            wrong.stderr.contains("refused the credentials (HTTP 401")
                || wrong.stderr.contains("refused the credentials (HTTP 403"),
            "\(server.name): \(wrong)")
        bench.report("pass: \(wrong.stderr.trimmingCharacters(in: .newlines).prefix(140))")
    }

    /// The scripted server's redirects, for each protocol it can stand in for: 307 and 308 to the
    /// same origin are followed with the same credentials, the body sent again; one to another
    /// origin is refused with its message, and nothing goes there.
    @Test(arguments: redirectScenarios)
    func redirectsFromTheScriptedServer(_ protocolAndScenario: String) throws {
        let words = protocolAndScenario.split(separator: " ").map(String.init)
        let (name, scenario) = (words[0], words[1])
        let scripted = try ScriptedServer.load()
        let files = try TestPaths.scratch("conf-redirect-\(name)-\(scenario)")
        let daemon = try DaemonProcess(
            name: "conf-redirect-\(name)-\(scenario)",
            config: "[daemon]\nretry_attempts = 2\nretry_for = 0\nretry_base_delay = 100\nnotify = none\n")
        try daemon.start()
        defer { daemon.stop() }
        let run = "c\(UUID().uuidString.prefix(8).lowercased())"
        let source = files.appendingPathComponent("moved.bin").path
        try CrashSupport.randomFile(at: source, size: 1 << 20)
        let id = try daemon.add(
            [source], to: "\(scripted.url)/\(scenario)/\(run)/", ["--protocol", name, "--user", "u:p"])[0]
        let job = try daemon.waitFor(id, timeout: 60)
        if scenario == "cross-307" {
            try #require(job.state == .failed)
            try #require(job.attempts == 1)
            try #require(
                job.error?.message.contains("uploads do not follow redirects") == true,
                "\(String(describing: job.error))")
            let other = try scripted.requests(under: "/store/\(run)/").filter { $0.listener == "other" }
            try #require(other.isEmpty, "nothing went to the other origin: \(other.map(\.target))")
            print("conformance: scripted \(name) \(scenario): pass: \(job.error?.message.prefix(140) ?? "")")
            return
        }
        try #require(job.state == .completed, "\(String(describing: job.error))")
        let url = try #require(job.result?.url)
        try #require(url.hasPrefix("\(scripted.url)/store/\(run)/"), "\(url)")
        let stored = try Data(contentsOf: URL(fileURLWithPath: scripted.directory + url.dropFirst(scripted.url.count)))
        let original = try Data(contentsOf: URL(fileURLWithPath: source))
        // A POST's body is the form: the file is its file part. (Compared outside #expect, which
        // would diff a mismatch byte by byte.)
        let same = name == "post" ? Self.filePart(of: stored) == original : stored == original
        try #require(same, "\(url) holds other bytes")
        let followed = try scripted.requests(under: "/store/\(run)/")
        try #require(
            followed.contains { $0.header("authorization") != nil }, "the same credentials: \(followed.map(\.target))")
        print("conformance: scripted \(name) \(scenario): pass: followed to \(url)")
    }

    /// The file's bytes in a multipart/form-data body with one file part.
    static func filePart(of body: Data) -> Data? {
        let bytes = [UInt8](body)
        guard let disposition = bytes.firstRange(of: Array("filename=".utf8)),
            let headersEnd = bytes[disposition.upperBound...].firstRange(of: Array("\r\n\r\n".utf8)),
            let end = bytes[headersEnd.upperBound...].firstRange(of: Array("\r\n--".utf8))
        else { return nil }
        return Data(bytes[headersEnd.upperBound..<end.lowerBound])
    }
}

/// One case against one server: a daemon of its own whose remote `s` is the server with its
/// credentials and the protocol's `remoteLines`, and `wrong` with a wrong password where the
/// server checks them; its files, and names of its own on the server.
final class Bench: @unchecked Sendable {
    // Invariant: used by one test case.
    let subject: ConformanceTests.Subject
    let caseName: String
    let daemon: DaemonProcess
    let files: URL
    /// The new nested folders this case uploads into, where the server can have them.
    let folder: String
    /// Names this case's files on the server.
    let run: String
    var server: ServerMatrix.Server { subject.server }

    init(_ subject: ConformanceTests.Subject, _ caseName: String) throws {
        self.subject = subject
        self.caseName = caseName
        let slug = "conf-\(subject.server.name)-\(caseName.replacingOccurrences(of: " ", with: "-"))"
        files = try TestPaths.scratch(slug)
        run = "\(slug)-\(UUID().uuidString.prefix(8).lowercased())"
        if case .none = subject.facts.folders(subject.server) { folder = "" } else { folder = "\(run)/a/b/" }
        var config = "[daemon]\nretry_attempts = 3\nretry_for = 0\nretry_base_delay = 100\nretry_max_delay = 1\n"
        config += "notify = none\n\n"
        let extra = subject.facts.remoteLines.map { $0 + "\n" }.joined()
        config += try subject.server.remoteSection(named: "s", passwordFile: files.appendingPathComponent("s.pw").path)
        config += extra + "\n"
        if subject.server.checksCredentials {
            config += try subject.server.remoteSection(
                named: "wrong", passwordFile: files.appendingPathComponent("wrong.pw").path,
                password: "not-the-password")
            config += extra + "\n"
        }
        daemon = try DaemonProcess(name: slug, config: config)
        try daemon.start()
    }

    func stop() { daemon.stop() }

    /// Whether the server refuses new folders the protocol cannot make (php-upload's POST).
    var foldersRefused: Bool {
        if case .refused = subject.facts.folders(server) { return true }
        return false
    }

    var folderWords: String {
        switch subject.facts.folders(server) {
        case .made: return "made \(folder)"
        case .none(let why): return "none: \(why)"
        case .refused(_, let why): return why
        }
    }

    /// A random file whose name is unique to this run (for servers that keep only the name).
    func file(_ name: String, size: Int) throws -> String {
        let path = files.appendingPathComponent("\(run)-\(name)").path
        try CrashSupport.randomFile(at: path, size: size)
        return path
    }

    /// Adds `source` to `s:PATH` and waits for the job to end.
    func upload(_ source: String, to path: String) throws -> JobInfo {
        let id = try daemon.add([source], to: "s:\(path)")[0]
        return try daemon.waitFor(id, timeout: 120)
    }

    /// The file's size and how it went, in words.
    func requestsWords(_ job: JobInfo) -> String {
        guard let line = subject.facts.remoteLines.first(where: { $0.hasPrefix("chunk_size") }) else {
            return "\(job.bytesTotal) bytes in one request"
        }
        return "\(job.bytesTotal) bytes, \(line)"
    }

    /// The job completed and the server holds the source's bytes where the matrix says; a
    /// defect the matrix names is expected to show (`withKnownIssue`). Returns the outcome in words.
    func expectCompleted(
        _ job: JobInfo, source: String, path: String, attempts: Int?,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        try #require(
            job.state == .completed, "\(server.name): \(String(describing: job.error))\n\(daemon.log(tail: 15))",
            sourceLocation: sourceLocation)
        if let attempts {
            try #require(
                job.attempts == attempts, "\(server.name): \(job.attempts) attempts", sourceLocation: sourceLocation)
        }
        let name = (source as NSString).lastPathComponent
        let stored = try self.stored(job, name: name, path: path)
        let size = try FileManager.default.attributesOfItem(atPath: source)[.size] as? Int ?? 0
        if let why = server.defects?["chunks-overwrite"], size > ConformanceTests.chunk,
            case .file(let landed) = stored
        {
            // Only the last chunk survives each PATCH's truncation: the size and that chunk are right.
            let original = try Data(contentsOf: URL(fileURLWithPath: source))
            let copy = try Data(contentsOf: URL(fileURLWithPath: landed))
            try #require(copy.count == original.count, "\(server.name)", sourceLocation: sourceLocation)
            let last = original.count - (original.count - 1) / ConformanceTests.chunk * ConformanceTests.chunk
            // (Compared outside #expect, which would diff a mismatch byte by byte.)
            let lastIntact = copy.suffix(last) == original.suffix(last)
            try #require(lastIntact, "\(server.name): the last chunk differs", sourceLocation: sourceLocation)
            let whole = copy == original
            withKnownIssue("\(server.name): \(why)") {
                #expect(whole, "\(server.name): the bytes differ", sourceLocation: sourceLocation)
            }
            return "expected-fail: \(why): the size and the last chunk are right, the rest is not"
        }
        try #require(
            try stored.sha256() == Command.sha256(source), "\(server.name): \(stored) differs",
            sourceLocation: sourceLocation)
        return "pass"
    }

    /// A server with the defect truncated-kept, after an upload was cut off by a kill: the job
    /// completed, the file's name holds the start of it, and the whole file is STEM (1).EXT.
    func expectTruncatedKept(_ job: JobInfo, source: String, path: String, why: String) throws -> String {
        try #require(job.state == .completed, "\(server.name): \(String(describing: job.error))")
        let name = (source as NSString).lastPathComponent
        guard case .file(let landed) = try stored(job, name: name, path: path) else {
            throw TestFailure("\(server.name): truncated-kept needs a root on disk")
        }
        let original = try Data(contentsOf: URL(fileURLWithPath: source))
        let cut = try Data(contentsOf: URL(fileURLWithPath: landed))
        let isStart = cut.count < original.count && original.starts(with: cut)
        withKnownIssue("\(server.name): \(why)") {
            #expect(!isStart, "\(server.name): \(landed) holds the first \(cut.count) bytes only")
        }
        let stem = (name as NSString).deletingPathExtension
        let ext = (name as NSString).pathExtension
        let whole = "\((landed as NSString).deletingLastPathComponent)/\(stem) (1).\(ext)"
        try #require(
            FileManager.default.fileExists(atPath: whole) && (try Command.sha256(whole) == Command.sha256(source)),
            "\(server.name): \(whole) is not the whole file")
        return
            "expected-fail: \(why): the cut-off \(cut.count) bytes kept as \(name), the whole file in \(stem) (1).\(ext)"
    }

    /// Where the server keeps an uploaded file, as its matrix entry says.
    func stored(_ job: JobInfo, name: String, path: String) throws -> Stored {
        let key = path + name
        guard let root = server.root else {
            guard let s3 = server.s3 else { throw TestFailure("\(server.name): the matrix says no root") }
            let client = try #require(
                S3TestServer([
                    "UPLOADD_TEST_S3_ENDPOINT": s3.endpoint, "UPLOADD_TEST_S3_BUCKET": s3.bucket,
                    "UPLOADD_TEST_S3_ACCESS_KEY": s3.accessKey, "UPLOADD_TEST_S3_SECRET_KEY": s3.secretKey,
                    "UPLOADD_TEST_S3_REGION": s3.region,
                ]))
            return .object(client, key: key)
        }
        switch server.layout {
        case "path": return .file("\(root)/\(key)")
        case "name": return .file("\(root)/\(name)")
        case "name-increment":
            let stem = (name as NSString).deletingPathExtension
            let ext = (name as NSString).pathExtension
            return .file("\(root)/\(stem).0001\(ext.isEmpty ? "" : "." + ext)")
        case "upload-id":
            let url = try #require(job.result?.url, "\(server.name): no result URL")
            return .file("\(root)/\((url as NSString).lastPathComponent)")
        default: throw TestFailure("\(server.name): unknown layout \(server.layout)")
        }
    }

    func report(_ outcome: String) { Self.report(subject, caseName, outcome) }

    static func report(_ subject: ConformanceTests.Subject, _ caseName: String, _ outcome: String) {
        let server = subject.server
        print("conformance: \(server.name) (\(server.version), \(server.protocol)) \(caseName): \(outcome)")
    }
}

/// An uploaded file where the server keeps it.
enum Stored: CustomStringConvertible {
    case file(String)
    case object(S3TestServer, key: String)

    /// SHA-256 of what the server holds, or nil when it holds nothing there.
    func sha256() throws -> String? {
        switch self {
        case .file(let path):
            return FileManager.default.fileExists(atPath: path) ? try Command.sha256(path) : nil
        case .object(let client, let key): return try client.sha256(of: key)
        }
    }

    var description: String {
        switch self {
        case .file(let path): return path
        case .object(let client, let key): return "\(client.endpoint)/\(client.bucket)/\(key)"
        }
    }
}
