import UploadCore

/// `uploadctl add PATH... --to DEST [options]`: queues one job per file.
struct AddCommand: ControlCommand {
    static let name = "add"
    static let abstract = "Queue files for upload and print one job ID per line"
    static let synopsis = """
        PATH... --to DEST [--protocol auto|put|post|tus|s3|chunked|file] [--header 'K: V']...
              [--field K=V]... [--user USER[:PASSWORD]] [--chunk-size SIZE] [--priority N]
              [--snapshot auto|copy|none] [--image SPEC] [--wait]
        """
    static let details = """
        Options:
          --to DEST           http(s)://host/dir/ (a trailing slash appends the file name),
                              http(s)://host/dir/name, s3://bucket/prefix/, file:///dir/, or REMOTE:path
          --protocol NAME     auto (default), put, post, tus, s3, chunked or file
          --header 'K: V'     an HTTP header to send; repeatable
          --field K=V         a form field for post and chunked; repeatable
          --user USER[:PW]    Basic auth credentials
          --chunk-size SIZE   bytes per chunk or block: 512K, 8M, 1G (binary units)
          --priority N        higher runs first (default 0)
          --snapshot MODE     auto (default), copy or none: how the file is kept from changing
          --image SPEC        shrink images before upload, as the daemon's image option reads SPEC
          --wait              after adding, wait like 'uploadctl wait' for the jobs to end

        Relative paths are made absolute against the current directory. When some files cannot be
        added, the others still are: their IDs are printed, the errors go to stderr, and the exit
        status is 1. With --json, prints {"jobs": [...], "errors": [...]}: the added jobs and, for
        each file that was not added, {"source", "code", "message"} with the daemon's JSON-RPC
        error (-32004: no space); with --wait, {"jobs": [...]} with their final state once every
        one has ended (the errors only on stderr).
        """
    static let options: [OptionSpec] = [
        .value("--to", "DEST"), .value("--protocol", "NAME"), .value("--header", "'K: V'"),
        .value("--field", "K=V"), .value("--user", "USER[:PASSWORD]"), .value("--chunk-size", "SIZE"),
        .value("--priority", "N"), .value("--snapshot", "MODE"), .value("--image", "SPEC"), .flag("--wait"),
    ]

    var paths: [String]
    var destination: String
    var uploadProtocol: UploadProtocol?
    var headers: [String]
    var fields: [String]
    var user: String?
    var chunkSize: String?
    var priority: Int?
    var snapshot: SnapshotMode?
    var image: String?
    var wait: Bool

    init(parsed: ParsedArguments) throws(UsageError) {
        paths = parsed.positionals
        guard !paths.isEmpty else { throw UsageError("missing PATH: name at least one file to upload") }
        if paths.contains("") { throw UsageError("a PATH is empty") }
        guard let destination = parsed.value("--to") else {
            throw UsageError("missing --to DEST: say where to upload")
        }
        guard !destination.isEmpty else { throw UsageError("--to needs a destination, not an empty string") }
        self.destination = destination
        uploadProtocol = try parsed.value("--protocol").map { (text) throws(UsageError) in
            try ArgumentValues.choice(text, option: "--protocol", as: UploadProtocol.self)
        }
        headers = try parsed.values("--header").map { (text) throws(UsageError) in try ArgumentValues.header(text) }
        fields = try parsed.values("--field").map { (text) throws(UsageError) in try ArgumentValues.field(text) }
        user = parsed.value("--user")
        if user?.isEmpty == true { throw UsageError("--user needs a user name") }
        chunkSize = try parsed.value("--chunk-size").map { (text) throws(UsageError) in
            try ArgumentValues.size(text, option: "--chunk-size")
        }
        priority = try parsed.value("--priority").map { (text) throws(UsageError) in
            try ArgumentValues.integer(text, option: "--priority")
        }
        snapshot = try parsed.value("--snapshot").map { (text) throws(UsageError) in
            try ArgumentValues.choice(text, option: "--snapshot", as: SnapshotMode.self)
        }
        image = parsed.value("--image")
        wait = parsed.contains("--wait")
    }

    /// The `job.add` params, one per path, with relative paths made absolute against `workingDirectory`.
    func requests(workingDirectory: String) -> [AddParams] {
        paths.map { path in
            var params = AddParams(
                source: Self.absolutePath(path, workingDirectory: workingDirectory), destination: destination)
            params.protocol = uploadProtocol
            params.headers = headers.isEmpty ? nil : headers
            params.fields = fields.isEmpty ? nil : fields
            params.user = user
            params.chunkSize = chunkSize
            params.priority = priority
            params.snapshot = snapshot
            params.image = image
            return params
        }
    }

    /// `path` if absolute, else joined to `workingDirectory`, without `.` or empty components.
    /// `..` is kept: the daemon's open() resolves it the way the shell's user expects.
    static func absolutePath(_ path: String, workingDirectory: String) -> String {
        let joined = path.hasPrefix("/") ? path : workingDirectory + "/" + path
        let components = joined.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        return "/" + components.joined(separator: "/")
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let connection = try context.connect()
        let requests = requests(workingDirectory: context.workingDirectory)
        let calls = try requests.map { params in
            (method: ControlMethod.add, params: try JSONValue(encoding: params))
        }
        let outcomes = try connection.callBatch(calls)
        var added: [JobInfo] = []
        var failures: [AddOutcome.Failure] = []
        for ((path, params), outcome) in zip(zip(paths, requests), outcomes) {
            switch outcome {
            case .success(let result):
                guard let job = try? result.decode(JobInfo.self) else {
                    throw ControlClientError.unexpectedAnswer("job.add returned no job for \(path)")
                }
                added.append(job)
            case .failure(let error):
                failures.append(AddOutcome.Failure(source: params.source, code: error.code, message: error.message))
                context.printError("\(path): \(error.message)")
            }
        }
        if !context.json { context.print(lines: added.map(\.id.description)) }
        guard wait, !added.isEmpty else {
            if context.json { try context.printJSON(AddOutcome(jobs: added, errors: failures)) }
            return failures.isEmpty ? .success : .failure
        }
        let tracker = try JobWaiter.follow(added.map(\.id), on: connection, until: nil)
        let waited = try JobWaiter.report(tracker, timeout: nil, context: context)
        return failures.isEmpty ? waited : .failure
    }
}

/// `add --json`: the jobs added, and why each other file was not.
struct AddOutcome: Encodable {
    struct Failure: Encodable {
        /// The absolute path, as the daemon got it.
        var source: String
        var code: Int
        var message: String
    }

    var jobs: [JobInfo]
    var errors: [Failure]
}
