import Foundation
import Glibc
import Synchronization
import UploadWire

@testable import UploadControl

/// A stand-in for uploadd on a real Unix socket in a temporary directory. Each request line is
/// recorded and answered with the lines `respond` returns; nil closes the connection, and so does
/// `FakeDaemon.hangUp` as the last line, after the lines before it are sent.
final class FakeDaemon: Sendable {
    let socketPath: String
    private let directory: String
    private let listener: Int32
    private let recorder = Recorder()
    /// Signaled when the accepting thread has returned: only then is `listener` closed, or its
    /// number, reused by the next test's fake, would be accepted on by this one's thread (which
    /// then answered another test's requests, under load).
    private let acceptingEnded = DispatchSemaphore(value: 0)

    private final class Recorder: Sendable {
        let lines = Mutex<[String]>([])
        let refusedSources = Mutex(0)
    }

    /// Which call failed while the fake was set up, and its errno (0: none set).
    struct SetupError: Error {
        var operation: String
        var errno: Int32 = Glibc.errno
    }

    static let hangUp = "<hang up>"

    /// `speaksSources`: `respond` gets `job.add` requests of `sources`. Without it, the fake is a
    /// daemon older than them, as most tests here were written for: it refuses them itself, as
    /// such a daemon does ("unknown key 'sources'"), and the line is not among `requestLines`
    /// (`refusedSourcesLines` counts them).
    init(speaksSources: Bool = false, respond: @escaping @Sendable (String) -> [String]?) throws {
        var template = Array("/tmp/uploadctl-test-XXXXXX".utf8CString)
        guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SetupError(operation: "mkdtemp")
        }
        directory = String(cString: created)
        socketPath = directory + "/control.sock"
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw SetupError(operation: "socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw SetupError(operation: "bind") }
        guard listen(listener, 8) == 0 else { throw SetupError(operation: "listen") }
        let listeningSocket = listener
        let record: @Sendable (String) -> Void = { [recorder] line in
            if !speaksSources, Wire.refusingSources(line) != nil {
                recorder.refusedSources.withLock { $0 += 1 }
            } else {
                recorder.lines.withLock { $0.append(line) }
            }
        }
        let answer: @Sendable (String) -> [String]? = { line in
            if !speaksSources, let refusal = Wire.refusingSources(line) { return [refusal] }
            return respond(line)
        }
        Thread.detachNewThread { [acceptingEnded] in
            defer { acceptingEnded.signal() }
            while true {
                let connection = accept(listeningSocket, nil, nil)
                if connection < 0 && errno == EINTR { continue }
                if connection < 0 { return }  // shut down
                Thread.detachNewThread { Self.serve(connection, respond: answer, record: record) }
            }
        }
    }

    /// A daemon that cuts its first subscriber off as too slow: it answers with `snapshot`, sends
    /// `events` and `events.overflow`, and hangs up; later subscriptions are answered with `then`.
    static func cuttingOffTheFirstSubscriber(
        snapshot: [JobInfo], events: [JobInfo] = [], then later: [JobInfo]
    ) throws -> FakeDaemon {
        let subscriptions = Mutex(0)
        return try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            let isFirst = subscriptions.withLock {
                $0 += 1
                return $0 == 1
            }
            guard isFirst else { return [Wire.result(id: request.id, JobList(jobs: later))] }
            return [Wire.result(id: request.id, JobList(jobs: snapshot))]
                + events.map { Wire.notification(.state, $0) }
                + [Wire.notification(.overflow, ["message": "more than 4 MiB of events unread"]), hangUp]
        }
    }

    /// Every request line received so far, in order.
    var requestLines: [String] { recorder.lines.withLock { $0 } }
    /// The lines of `sources` refused as an older daemon refuses them (not in `requestLines`).
    var refusedSourcesLines: Int { recorder.refusedSources.withLock { $0 } }

    /// Stops accepting and removes the socket.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = acceptingEnded.wait(timeout: .now() + 10)
        close(listener)
        unlink(socketPath)
        rmdir(directory)
    }

    private static func serve(
        _ connection: Int32, respond: @Sendable (String) -> [String]?, record: @Sendable (String) -> Void
    ) {
        defer { close(connection) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(connection, &buffer, buffer.count)
            if count <= 0 { return }
            pending += buffer[..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                record(line)
                guard var answer = respond(line) else { return }
                let hangUp = answer.last == FakeDaemon.hangUp
                if hangUp { answer.removeLast() }
                let bytes = Array(answer.map { $0 + "\n" }.joined().utf8)
                var offset = 0
                while offset < bytes.count {
                    let written = bytes[offset...].withUnsafeBytes {
                        send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    if written <= 0 { return }
                    offset += written
                }
                if hangUp { return }
            }
        }
    }
}

/// A queued job in `batch`, whose ID is the next of `nextID`: the jobs a fake daemon adds.
func nextQueuedJob(_ nextID: borrowing Mutex<UInt64>, batch: UInt64) -> JobInfo {
    var job = sampleJob(
        id: nextID.withLock { id in
            defer { id += 1 }
            return id
        }, state: .queued)
    job.batch = JobID(batch)
    return job
}

/// Helpers to read requests and write answers as the daemon does.
enum Wire {
    /// The requests on one line: a batch or a lone request.
    static func requests(_ line: String) -> [RPCRequest] {
        let data = Data(line.utf8)
        if let batch = try? JSONCoding.decoder.decode([RPCRequest].self, from: data) { return batch }
        return (try? [JSONCoding.decoder.decode(RPCRequest.self, from: data)]) ?? []
    }

    /// An older daemon's answer to a line of `job.add` requests of `sources`; nil for other lines.
    static func refusingSources(_ line: String) -> String? {
        let requests = requests(line)
        guard requests.contains(where: { $0.method == "job.add" && $0.params?.objectValue?["sources"] != nil }) else {
            return nil
        }
        let answers = requests.map { error(id: $0.id, RPCError.invalidParams("unknown key 'sources'")) }
        return answers.count == 1 && !line.hasPrefix("[") ? answers[0] : "[" + answers.joined(separator: ",") + "]"
    }

    static func result(id: JSONValue?, _ value: some Encodable) -> String {
        encode(RPCResponse(id: id ?? .null, result: try! JSONValue(encoding: value)))
    }

    static func error(id: JSONValue?, _ error: RPCError) -> String {
        encode(RPCResponse(id: id ?? .null, error: error))
    }

    static func notification(_ event: ControlEvent, _ params: some Encodable) -> String {
        encode(RPCNotification(method: event.rawValue, params: try! JSONValue(encoding: params)))
    }

    static func encode(_ value: some Encodable) -> String {
        String(decoding: try! JSONCoding.encoder.encode(value), as: UTF8.self)
    }
}

/// Output captured from a command run.
final class CapturedOutput {
    var standardOutput = ""
    var standardError = ""

    var streams: OutputStreams {
        OutputStreams(standardOutput: { self.standardOutput += $0 }, standardError: { self.standardError += $0 })
    }
}
