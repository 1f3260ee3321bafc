import Foundation
import Glibc
import UploadWire

/// `uploadctl add PATH...|- --to DEST [options]`: queues one job per file, folders file by file.
struct AddCommand: ControlCommand {
    static let name = "add"
    static let abstract = "Queue files for upload and print one job ID per line"
    static let synopsis = """
        PATH...|- --to DEST [--exclude GLOB]... [--hidden] [--follow] [-0] [--protocol \(UploadProtocol.alternatives)] [--header 'K: V']...
              [--header-file FILE] [--field K=V]... [--file-field NAME] [--user USER[:PASSWORD]] [--password-file FILE]
              [--chunk-size SIZE] [--priority N] [--snapshot auto|copy|none] [--image SPEC] [--wait]
              [--meta K=V]... [--client-token TOKEN]
        """
    static let details = """
        A folder is added with every file inside it, keeping their folders under DEST: with
        --to nas:2026/, ~/Pictures/trip/day1/a.jpg goes to 2026/trip/day1/a.jpg. Missing folders
        are made on the server (WebDAV MKCOL, file://). '-' reads the paths from stdin, one per line.
        All the jobs of one add form a batch, named by its first job's ID: list, wait and cancel take
        --batch N.

        Options:
          --exclude GLOB      skip files and folders whose name, or path inside the folder added,
                              matches GLOB ('*.tmp', 'cache/*'); repeatable
          --hidden            also add hidden files and folders (names starting with '.')
          --follow            follow symlinks inside folders (skipped by default) and symlinks
                      of other users on the way to a PATH named (refused by default)
          -0                  with '-': the paths on stdin end with NUL, as find -print0 writes
          --to DEST           http(s)://host/dir/ (a trailing slash appends the file name),
                              http(s)://host/dir/name, s3://bucket/prefix/, file:///dir/, or REMOTE:path
          --protocol NAME     \(UploadProtocol.spelledOut) (auto is the default; see below)
          --header 'K: V'     an HTTP header to send; repeatable
          --header-file FILE  headers to send, one 'K: V' per line (keeps tokens out of ps)
          --field K=V         a form field for post and chunked; repeatable
          --file-field NAME   post: the name of the form part that carries the file (default:
                              the remote's file_field, else 'file'; PHP forms often want another)
          --user USER[:PW]    Basic auth credentials; without :PW the password is asked for on
                              the terminal, without echo
          --password-file F   the password for --user, from the first line of F
          --chunk-size SIZE   bytes per chunk or block: 512K, 8M, 1G (binary units)
          --priority N        higher runs first (default 0)
          --snapshot MODE     auto (default), copy or none: how the file is kept from changing
          --image SPEC        prepare images before upload, e.g. max=2048,quality=75,strip-gps
                              (see Images below); files that are not images go as they are
          --wait              after adding, wait like 'uploadctl wait' for the jobs to end
          --meta K=V          data of your own to keep with each job (shown by show, sent in
                              events and to hooks as UPLOAD_METADATA); repeatable
          --client-token T    a token of your own for the one file added: adding it again with
                              the same token, even after a restart, gives back the same job

        Protocols:
        \(UploadProtocol.allCases.map { "  \($0.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0))\($0.traits.summary)" }.joined(separator: "\n"))

        Images (--image, or image = SPEC in a remote): comma-separated
          max=PIXELS          cap the longest side (never upscaled, aspect ratio kept)
          quality=1-100       JPEG/WebP quality (default 75)
          format=jpeg|webp|keep   what to send (default jpeg; the name's extension follows)
          max-bytes=SIZE      lower the quality, then the size, until the file fits (300K)
          strip-gps | strip   drop the location (EXIF GPS, XMP) | all metadata; EXIF is kept
                              otherwise, upright (orientation applied), colours in sRGB
          on-error=original   send a corrupt or refused image as it is (default: the job fails)
          max-pixels=N        refuse images declaring more than N megapixels (default 200)
          untrusted-loaders   also read formats libvips marks untrusted (JPEG 2000, FITS, ...)

        Relative paths are made absolute against the current directory. When some files cannot be
        added, the others still are: their IDs are printed, the errors go to stderr, and the exit
        status is 1. With --json, prints {"jobs": [...], "errors": [...]}: the added jobs and, for
        each file that was not added, {"source", "code", "message"} with the daemon's JSON-RPC
        error (-32004: no space); with --wait, the same once every job has ended, with their final
        state.
        """
    static let options: [OptionSpec] = [
        .value("--to", "DEST"), .value("--protocol", "NAME"), .value("--header", "'K: V'"),
        .value("--header-file", "FILE"), .value("--field", "K=V"), .value("--file-field", "NAME"),
        .value("--user", "USER[:PASSWORD]"),
        .value("--password-file", "FILE"), .value("--chunk-size", "SIZE"),
        .value("--priority", "N"), .value("--snapshot", "MODE"), .value("--image", "SPEC"), .flag("--wait"),
        .value("--exclude", "GLOB"), .flag("--hidden"), .flag("--follow"), .flag("-0"),
        .value("--meta", "K=V"), .value("--client-token", "TOKEN"),
    ]

    var paths: [String]
    var destination: String
    var uploadProtocol: UploadProtocol?
    var headers: [String]
    var fields: [String]
    var user: String?
    /// Read when the command runs, not when it is parsed (parsing stays pure).
    var headerFile: String?
    var passwordFile: String?
    var chunkSize: String?
    var fileField: String?
    var priority: Int?
    var snapshot: SnapshotMode?
    var image: String?
    var wait: Bool
    var metadata: [String: String]
    var clientToken: String?
    var walker: FolderWalker
    /// `-`: more paths come from stdin; `-0`: NUL-separated.
    var readsStandardInput: Bool
    var nulSeparated: Bool
    /// `--user NAME:PASSWORD`, a credential in `--header` or in `--to`, as typed.
    let secretsOnCommandLine: [CommandLineSecret]

    init(parsed: ParsedArguments) throws(UsageError) {
        readsStandardInput = parsed.positionals.contains("-")
        paths = parsed.positionals.filter { $0 != "-" }
        guard !paths.isEmpty || readsStandardInput else {
            throw UsageError("missing PATH: name at least one file or folder to upload, or - to read them from stdin")
        }
        if paths.contains("") { throw UsageError("a PATH is empty") }
        nulSeparated = parsed.contains("-0")
        if nulSeparated && !readsStandardInput {
            throw UsageError("-0 goes with - (paths from stdin, as find -print0 writes them)")
        }
        metadata = [:]
        for text in parsed.values("--meta") {
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw UsageError("--meta needs KEY=VALUE, not '\(text)'")
            }
            metadata[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        clientToken = parsed.value("--client-token")
        if clientToken?.isEmpty == true { throw UsageError("--client-token needs a token") }
        walker = FolderWalker(
            excludes: parsed.values("--exclude"), includeHidden: parsed.contains("--hidden"),
            followSymlinks: parsed.contains("--follow"))
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
        fileField = parsed.value("--file-field")
        if let fileField, !FieldSyntax.isPartName(fileField) {
            throw UsageError("--file-field needs a name of 1 to 256 printable characters without quotes")
        }
        user = parsed.value("--user")
        if user?.isEmpty == true || user?.hasPrefix(":") == true { throw UsageError("--user needs a user name") }
        headerFile = parsed.value("--header-file")
        passwordFile = parsed.value("--password-file")
        if passwordFile != nil {
            guard let user, !user.contains(":") else {
                throw UsageError("--password-file goes with --user USER (a name without :PASSWORD)")
            }
        }
        chunkSize = try parsed.value("--chunk-size").map { (text) throws(UsageError) in
            try ArgumentValues.chunkSize(text, option: "--chunk-size")
        }
        priority = try parsed.value("--priority").map { (text) throws(UsageError) in
            try ArgumentValues.integer(text, option: "--priority")
        }
        snapshot = try parsed.value("--snapshot").map { (text) throws(UsageError) in
            try ArgumentValues.choice(text, option: "--snapshot", as: SnapshotMode.self)
        }
        image = parsed.value("--image")
        wait = parsed.contains("--wait")
        secretsOnCommandLine =
            parsed.values("--user").compactMap(CommandLineSecret.user)
            + parsed.values("--header").compactMap(CommandLineSecret.header)
            + parsed.values("--to").compactMap(CommandLineSecret.destination)
    }

    /// The `job.add` params, one per path, with relative paths made absolute against `workingDirectory`.
    func requests(workingDirectory: String) -> [AddParams] {
        paths.map { path in
            var params = template
            params.source = Self.absolutePath(path, workingDirectory: workingDirectory)
            return params
        }
    }

    /// What every job of this add is given, whatever its file.
    var template: AddParams {
        do {
            var params = AddParams(source: "", destination: destination)
            params.protocol = uploadProtocol
            params.headers = headers.isEmpty ? nil : headers
            params.fields = fields.isEmpty ? nil : fields
            params.fileField = fileField
            params.user = user
            params.chunkSize = chunkSize
            params.priority = priority
            params.snapshot = snapshot
            params.image = image
            params.umask = Int(Self.processUmask)
            params.metadata = metadata.isEmpty ? nil : metadata
            params.clientToken = clientToken
            return params
        }
    }

    /// Where the files of `folder` (relative to a folder named, empty for a file named on its
    /// own) go (`Destination.under`). A folder needs DEST to be a folder too.
    func destination(forFolder folder: String) throws(UsageError) -> String {
        guard let under = Destination.under(destination, folder: folder) else {
            throw UsageError(
                "a folder's files go into a folder: end --to with / (as in --to \(destination)/) to keep them under it"
            )
        }
        return under
    }

    /// This process's umask, which `file://` copies follow as `cp` would (reading it means setting it).
    static let processUmask: mode_t = {
        let value = umask(0o022)
        umask(value)
        return value
    }()

    /// `path` if absolute, else joined to `workingDirectory`, without `.` or empty components.
    /// `..` is kept: the daemon's open() resolves it the way the shell's user expects.
    static func absolutePath(_ path: String, workingDirectory: String) -> String {
        let joined = path.hasPrefix("/") ? path : workingDirectory + "/" + path
        if isPlainAbsolute(joined) { return joined }  // most paths a shell expands: nothing to split
        let components = joined.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        return "/" + components.joined(separator: "/")
    }

    /// Whether `path` starts with `/` and has no empty or `.` component and no trailing `/`.
    private static func isPlainAbsolute(_ path: String) -> Bool {
        let utf8 = path.utf8
        guard utf8.first == UInt8(ascii: "/"), utf8.count > 1, utf8.last != UInt8(ascii: "/") else { return false }
        let slash = UInt8(ascii: "/")
        let dot = UInt8(ascii: ".")
        var previous = slash
        var beforePrevious = slash
        for byte in utf8.dropFirst() {
            // `//`, `/./` (and a `/.` at the end, checked below) are what a split would drop.
            if byte == slash && (previous == slash || (previous == dot && beforePrevious == slash)) { return false }
            beforePrevious = previous
            previous = byte
        }
        return !(previous == dot && beforePrevious == slash)
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        var command = self
        try command.readSecrets(context)
        let connection = try context.connect()
        var queuer = JobQueuer(
            connection: connection, context: context, template: command.template, onlyOneFile: command.onlyOneFile)
        var unreadable: [JobFailure] = []
        var skipped: [FolderWalker.Skip] = []
        var pathsRead = paths.count
        let folders = NamedFolders()
        let queue = { (path: String) throws in
            let absolute = Self.absolutePath(path, workingDirectory: context.workingDirectory)
            try command.walker.walk(absolute, folders: folders) { found in
                try queuer.add(
                    source: found.path, identity: found.identity,
                    destination: try command.destination(forFolder: found.folder))
            } problem: { problem in
                unreadable.append(
                    JobFailure(
                        source: problem.path, error: RPCError(code: RPCError.sourceErrorCode, message: problem.message))
                )
                context.printError("\(problem.path): \(problem.message)")
            } skipped: {
                skipped.append($0)
            }
        }
        for path in paths { try queue(path) }
        if readsStandardInput {
            try StandardInputPaths.forEach(nulSeparated: nulSeparated) {
                pathsRead += 1
                try queue($0)
            }
        }
        try queuer.flush()
        let added = queuer.added
        let failures = queuer.failures + unreadable
        queuer.finish(
            summary: queuer.batch.flatMap { batch in
                added.count > 1 ? "batch \(batch): \(added.count) jobs queued (uploadctl wait --batch \(batch))" : nil
            })
        if added.isEmpty && failures.isEmpty {
            context.printError("nothing to add: " + command.nothingFound(pathsRead: pathsRead, skipped: skipped))
            return .failure
        }
        // A destination or option the daemon refuses is a usage error, as uploadctl's own checks are.
        let refused: ExitCode = failures.contains { $0.code == RPCError.invalidParamsCode } ? .usage : .failure
        guard wait, !added.isEmpty else {
            if context.json { try context.printJSON(JobList(jobs: queuer.addedJobs, errors: failures)) }
            return failures.isEmpty ? .success : refused
        }
        // On a terminal, a bar per job in flight until they end.
        let bars = LiveBars.forPeople(context)
        let jobs = JobWaiter.Selection.ids(added)
        let waited: ExitCode
        if let bars {
            let tracker = try JobWaiter.follow(
                jobs, as: JobInfo.self, on: connection, until: nil, progress: true,
                onStart: { $0.latestJobs.forEach { bars.know($0) } },
                onNotification: { notification, _ in bars.follow(notification) })
            bars.finish()
            waited = try JobWaiter.report(tracker, timeout: nil, context: context, addErrors: failures)
        } else {
            waited = try JobWaiter.waitAndReport(
                jobs, on: connection, until: nil, timeout: nil, context: context, addErrors: failures)
        }
        return failures.isEmpty ? waited : refused
    }
}

extension AddCommand {
    /// Fills in what comes from files and the terminal: `--header-file`, `--password-file`, and
    /// the password of a `--user` given without one.
    mutating func readSecrets(_ context: CommandContext) throws(UsageError) {
        if let headerFile { headers += try SecretInput.headers(fromFile: headerFile, context: context) }
        guard let name = user, !name.contains(":") else { return }
        let password =
            if let passwordFile {
                try SecretInput.password(fromFile: passwordFile, context: context)
            } else {
                try SecretInput.promptPassword(for: name)
            }
        user = "\(name):\(password)"
    }
}
