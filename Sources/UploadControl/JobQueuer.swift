import Foundation
import Glibc
import UploadClient
import UploadWire

/// Sends `add`'s files to the daemon as they are found, in requests of up to `batchSize`, so that
/// a folder of 50,000 files starts uploading long before the last one is queued. Every job joins
/// one batch: the first added job starts it (`new_batch`) and gives it its ID.
///
/// The first requests are small (`requestSizes`): the daemon copies and syncs a request's files
/// before it answers and queues them, so the first uploads start after a few files' copies
/// rather than after 500.
struct JobQueuer {
    static let batchSize = 500
    /// The files in each request, from the first: then `batchSize` each.
    static let requestSizes = [1, 50, 200]
    /// Requests sent before the oldest one's answers are read: the daemon checks and copies the
    /// files of one while it syncs and journals the one before.
    static let requestsInFlight = 2

    let connection: DaemonConnection
    let context: CommandContext
    /// The params every job shares; `source` and `destination` are filled in per file.
    let template: AddParams
    /// Whether to show "queued N files" on stderr while adding (a terminal, not --json).
    let showsProgress: Bool
    /// Why this add may take one file only (a `--client-token`, a destination that names one
    /// file), or nil. Then nothing is sent until every file is found, so that a second file is
    /// refused before anything is queued.
    let onlyOneFile: String?

    private(set) var batch: JobID?
    /// The jobs added, in order.
    private(set) var added: [JobID] = []
    /// The jobs added, whole: kept for `--json` only.
    private(set) var addedJobs: [JobInfo] = []
    private(set) var failures: [JobFailure] = []
    /// How many files got each refusal that names no file, so that it is printed once.
    private var refusalsSeen: [String: Int] = [:]
    private var pending: [AddParams] = []
    /// Requests sent whose answers are not read yet, oldest first.
    private var inFlight: [(sent: DaemonConnection.PendingCalls, requests: [AddParams])] = []
    private var requestsSent = 0
    /// The template's request params, encoded once: each file's differ in a few keys.
    private var templateParams: [String: JSONValue]?
    /// Only the ID and batch of each job in the answers, unless `--json` prints them whole (or
    /// an older daemon does not know `job_fields`).
    private var answerFields: [String]?
    /// Whether each file's identity goes with it: not to a daemon older than `source_identity`,
    /// which would refuse the add (and cannot check it either).
    private var sendsIdentities = true
    /// Whether a request's files go in one `job.add` of `sources`, not one `job.add` each: not to
    /// a daemon older than `sources`, nor with a client token (which names one job).
    private var sendsSources: Bool

    init(connection: DaemonConnection, context: CommandContext, template: AddParams, onlyOneFile: String? = nil) {
        self.connection = connection
        self.context = context
        self.template = template
        self.onlyOneFile = onlyOneFile
        showsProgress = !context.json && isatty(STDERR_FILENO) == 1
        answerFields = context.json ? nil : ["batch"]
        sendsSources = template.clientToken == nil
    }

    /// Queues one file for `destination`, the file `identity` (what its check found); sends a
    /// request once enough are waiting.
    mutating func add(source: String, identity: SourceIdentity?, destination: String) throws {
        if let onlyOneFile, added.count + failures.count + pending.count >= 1 { throw UsageError(onlyOneFile) }
        var params = template
        params.source = source
        params.sourceIdentity = identity
        params.destination = destination
        pending.append(params)
        if onlyOneFile == nil, pending.count >= nextRequestSize { try sendWaiting() }
    }

    /// Sends what is waiting and reads every answer.
    mutating func flush() throws {
        try sendWaiting()
        while !inFlight.isEmpty { try readOldestAnswers() }
    }

    /// Ends the progress line: `summary` takes its place when there is one (the count it showed
    /// would say the same twice).
    func finish(summary: String? = nil) {
        for count in refusalsSeen.values where count > 1 {
            context.printError("(the same for \(count - 1) more file\(count == 2 ? "" : "s"))")
        }
        guard showsProgress && !added.isEmpty else { return }
        guard let summary else { return context.output.standardError("\n") }
        context.output.standardError("\r\u{1B}[K")
        context.printError(summary)
    }

    /// One file the daemon refused, on one line (a newline in a name is shown escaped), named once
    /// (the daemon's message may start with the path already). A file found in a folder cannot be
    /// named in `--to` on its own: it is renamed or left out instead.
    static func failureLine(source: String, message: String, inFolder: Bool) -> String {
        var message = message
        if inFolder {
            message = message.replacingOccurrences(
                of: "name the file in the destination, as --to .../NAME",
                with: "rename the file, or leave it out with --exclude")
        }
        let line = message.hasPrefix(source) ? message : "\(source): \(message)"
        return TerminalText.escaped(line)
    }

    /// "queued 1 file", "queued 2 files".
    static func queuedText(_ count: Int) -> String { "queued \(count) file\(count == 1 ? "" : "s")" }

    /// The files the next request takes.
    private var nextRequestSize: Int {
        requestsSent < Self.requestSizes.count ? Self.requestSizes[requestsSent] : Self.batchSize
    }

    /// Sends what is waiting. Until a batch exists, the first file goes alone to start it, and its
    /// answer (the batch's ID) is read before the others go.
    private mutating func sendWaiting() throws {
        while !pending.isEmpty {
            if batch == nil {
                var first = pending.removeFirst()
                first.newBatch = true
                try start([first])
                try readOldestAnswers()
            } else {
                let requests = pending.prefix(try filesInNextRequest()).map { params in
                    var params = params
                    params.batch = batch
                    return params
                }
                pending.removeFirst(requests.count)
                try start(requests)
            }
        }
    }

    /// Sends one request's files (they share their batch), once fewer than `requestsInFlight` wait.
    private mutating func start(_ requests: [AddParams]) throws {
        while inFlight.count >= Self.requestsInFlight { try readOldestAnswers() }
        inFlight.append((try connection.startBatch(calls(for: requests)), requests))
        requestsSent += 1
    }

    private mutating func calls(for requests: [AddParams]) throws -> [(method: ControlMethod, params: JSONValue)] {
        var shared = try sharedParams(requests[0])
        if sendsSources {
            shared = sourcesTemplate(shared, destination: requests[0].destination)
            shared["sources"] = .array(sources(of: requests).map(\.json))
            // One request on a line of its own: the daemon takes its IDs in the turn of that line.
            return [(method: ControlMethod.add, params: JSONValue.object(shared))]
        }
        return requests.map { params in
            var object = shared
            object["source"] = .string(params.source)
            if sendsIdentities, let identity = params.sourceIdentity {
                object["source_identity"] = .string(identity.description)
            }
            object["destination"] = .string(params.destination)
            return (method: ControlMethod.add, params: JSONValue.object(object))
        }
    }

    /// How many of the waiting files the next request takes: `nextRequestSize`, or fewer when
    /// their `sources` would not fit one request line (`AddSource.requests`).
    private mutating func filesInNextRequest() throws -> Int {
        let files = Array(pending.prefix(nextRequestSize))
        guard sendsSources, !files.isEmpty else { return files.count }
        let shared = sourcesTemplate(try sharedParams(files[0]), destination: files[0].destination)
        let sharedBytes = try JSONValue.object(shared).jsonBytes().count
        return AddSource.requests(sources(of: files), sharedBytes: sharedBytes).first?.count ?? files.count
    }

    /// The params a request's files share, in a `job.add` of `sources`.
    private func sourcesTemplate(_ shared: [String: JSONValue], destination: String) -> [String: JSONValue] {
        var shared = shared
        shared["destination"] = .string(destination)
        shared["source"] = nil
        shared["source_identity"] = nil
        return shared
    }

    /// The files of one request as `sources`: the first file's destination is the request's, and a
    /// file with another (in a sub-folder) names its own.
    private func sources(of requests: [AddParams]) -> [AddSource] {
        let destination = requests[0].destination
        return requests.map { AddSource($0, requestDestination: destination, withIdentity: sendsIdentities) }
    }

    /// Stops sending a key an older daemon refused: `job_fields` (it then answers whole jobs) or
    /// `source_identity` (it then opens the path as it finds it, as it always did). False when
    /// the refusal is of something else.
    private mutating func dropKey(refusedBy refusal: RPCError) -> Bool {
        if sendsSources, refusal.refusesUnknownKey("sources") {
            sendsSources = false
            return true
        }
        if answerFields != nil, refusal.refusesUnknownKey("job_fields") {
            answerFields = nil
            return true
        }
        if sendsIdentities, refusal.refusesUnknownKey("source_identity") {
            sendsIdentities = false
            return true
        }
        return false
    }

    /// Reads the answers to the oldest request in flight.
    private mutating func readOldestAnswers() throws {
        let (sent, requests) = inFlight.removeFirst()
        var outcomes = try connection.answers(to: sent)
        // An older daemon refuses the keys it does not know, one at a time: ask again without
        // each. Only the first request can meet it (the others go after its answer), so nothing
        // else is in flight.
        while case .failure(let refusal)? = outcomes.first, dropKey(refusedBy: refusal) {
            outcomes = try connection.callBatch(calls(for: requests))
        }
        var ids: [String] = []
        let each = try Self.eachFile(outcomes, count: requests.count, asSources: sendsSources)
        for (params, outcome) in zip(requests, each) {
            switch outcome {
            case .success(let result):
                let job: AddedJob
                if context.json, let whole = try? result.decode(JobInfo.self) {
                    addedJobs.append(whole)
                    job = AddedJob(id: whole.id, batch: whole.batch)
                } else if !context.json, let added = AddedJob(result) {
                    job = added
                } else {
                    throw ControlClientError.unexpectedAnswer("job.add returned no job for \(params.source)")
                }
                if batch == nil { batch = job.batch ?? job.id }
                added.append(job.id)
                ids.append(job.id.description)
            case .failure(let error):
                failures.append(JobFailure(source: params.source, error: error))
                // A refusal of what every file shares (a bad --image SPEC) is said once, not per file.
                if !error.message.contains(params.source) {
                    refusalsSeen[error.message, default: 0] += 1
                    if refusalsSeen[error.message]! > 1 { continue }
                }
                if showsProgress { context.output.standardError("\r") }
                context.printError(
                    Self.failureLine(
                        source: params.source, message: error.messageForPeople,
                        inFolder: params.destination != template.destination))
            }
        }
        // IDs as they come, so a script reading them can start on the first ones.
        if !context.json { context.print(lines: ids) }
        if showsProgress { context.output.standardError("\r" + Self.queuedText(added.count)) }
    }
}

extension JobQueuer {
    /// Each file's outcome, in order: its job, or why it was not added. A request of `sources`
    /// has one answer for all its files: the jobs added, in order, and the failures by place.
    fileprivate static func eachFile(
        _ outcomes: [Result<RPCResult, RPCError>], count: Int, asSources: Bool
    ) throws -> [Result<JSONValue, RPCError>] {
        guard asSources else { return outcomes.map { outcome in outcome.map { (try? $0.value()) ?? .null } } }
        switch outcomes.first {
        case .failure(let error)?: return Array(repeating: .failure(error), count: count)
        case .success(let result)?: return try eachFile(of: result.value().objectValue, count: count)
        case nil: throw ControlClientError.unexpectedAnswer("job.add of sources was not answered")
        }
    }

    /// The outcome of each of `count` files from the answer to one `job.add` of `sources`.
    private static func eachFile(of answer: [String: JSONValue]?, count: Int) throws -> [Result<JSONValue, RPCError>] {
        guard case .array(let jobs)? = answer?["jobs"] else {
            throw ControlClientError.unexpectedAnswer("job.add of sources returned no jobs")
        }
        var each = [Result<JSONValue, RPCError>?](repeating: nil, count: count)
        if case .array(let errors)? = answer?["errors"] {
            for error in errors {
                guard let error = error.objectValue, case .number(let place)? = error["index"],
                    let index = Int(exactly: place), each.indices.contains(index),
                    case .number(let number)? = error["code"], let code = Int(exactly: number),
                    case .string(let message)? = error["message"]
                else { throw ControlClientError.unexpectedAnswer("job.add of sources returned an error of no file") }
                each[index] = .failure(RPCError(code: code, message: message))
            }
        }
        var added = jobs.makeIterator()
        for index in each.indices where each[index] == nil {
            guard let job = added.next() else {
                throw ControlClientError.unexpectedAnswer("job.add of sources returned fewer jobs than files")
            }
            each[index] = .success(job)
        }
        return each.map { $0! }
    }
}

/// What `add` needs of an added job.
private struct AddedJob {
    var id: JobID
    var batch: JobID?

    /// Read straight from the answer's JSON: through the generic decoder, a fifteenth of `add`'s
    /// CPU. Nil when `id` is not a job's ID, or `batch` is there and not one.
    init?(_ result: JSONValue) {
        guard case .object(let job) = result, let id = Self.jobID(job["id"]) else { return nil }
        self.id = id
        switch job["batch"] {
        case nil, .null?: batch = nil
        case let value?:
            guard let batch = Self.jobID(value) else { return nil }
            self.batch = batch
        }
    }

    init(id: JobID, batch: JobID?) {
        self.id = id
        self.batch = batch
    }

    private static func jobID(_ value: JSONValue?) -> JobID? {
        guard case .number(let number)? = value, let raw = UInt64(exactly: number), raw > 0 else { return nil }
        return JobID(rawValue: raw)
    }
}

extension JobQueuer {
    /// The `job.add` params one request's files share: the template's, encoded once (the
    /// encoder's generic containers were a fifth of `add`'s CPU per file), with the batch and the
    /// fields asked for; each file's `source` and `destination` go in per file.
    fileprivate mutating func sharedParams(_ params: AddParams) throws -> [String: JSONValue] {
        if templateParams == nil { templateParams = try JSONValue(encoding: template).objectValue ?? [:] }
        var object = templateParams!
        object["batch"] = params.batch.map { .number(Double($0.rawValue)) }
        object["new_batch"] = params.newBatch.map { .bool($0) }
        object["job_fields"] = answerFields.map { .array($0.map { .string($0) }) }
        return object
    }
}

/// Reads `add -`'s paths from stdin, one per line or NUL-separated (`-0`), with getdelim(3).
enum StandardInputPaths {
    static func forEach(nulSeparated: Bool, _ body: (String) throws -> Void) rethrows {
        // A stream of its own on a copy of fd 0 (glibc's `stdin` is shared mutable state to Swift).
        let copy = dup(STDIN_FILENO)
        guard copy >= 0 else { return }
        guard let input = fdopen(copy, "r") else {
            close(copy)
            return
        }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer {
            free(line)
            fclose(input)
        }
        let delimiter: Int32 = nulSeparated ? 0 : 10
        while true {
            let length = getdelim(&line, &capacity, delimiter, input)
            guard length >= 0, let line else { return }
            var bytes = UnsafeBufferPointer(
                start: UnsafeRawPointer(line).assumingMemoryBound(to: UInt8.self), count: length)[...]
            if bytes.last == UInt8(bitPattern: Int8(delimiter)) { bytes = bytes.dropLast() }
            if !nulSeparated, bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
            guard !bytes.isEmpty else { continue }
            try body(String(decoding: bytes, as: UTF8.self))
        }
    }
}
