import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// A named destination from the config: `[remote NAME]`, used as `--to NAME:path`.
struct RemoteConfig: Sendable, Equatable {
    var name: String
    var uploadProtocol: UploadProtocol = .auto
    /// Base URL; `NAME:path` appends `path` to it.
    var url: String
    var user: String?
    /// Where the password is read from when the job runs; never stored in the journal.
    var passwordFile: String?
    /// A systemd credential name, read from `$CREDENTIALS_DIRECTORY/NAME`.
    var passwordCredential: String?
    var headers: [KeyValue] = []
    var fields: [KeyValue] = []
    /// The multipart field name of the file part for post (default `file`).
    var fileField: String?
    /// A CA bundle to verify the server's certificate with, for private CAs.
    var caFile: String?
    /// Whether uploads may use HTTP/2 when the server offers it; else HTTP/1.1 (`HTTPRequest.http2`).
    var http2 = false
    var chunkSize: Int64?
    /// A JSON pointer (`/data/url`) to the uploaded file's URL in a post answer.
    var resultURLPointer: String?
    /// S3: `http(s)://host[:port]` of the service; AWS itself when unset.
    var endpoint: String?
    var region: String?
    var accessKeyID: String?
    /// S3: a file holding the secret access key, read when the job runs.
    var secretAccessKeyFile: String?
    /// S3: a systemd credential holding the secret access key, `$CREDENTIALS_DIRECTORY/NAME`.
    var secretAccessKeyCredential: String?
    /// S3: `endpoint/bucket/key` (true) or `bucket.endpoint/key` (false); by default path-style
    /// for a custom endpoint and virtual-hosted for AWS.
    var pathStyle: Bool?
    /// S3: files this large or larger are sent in parts (default 8 MiB).
    var multipartThreshold: Int64?
    /// S3: sign each body's SHA-256 (default: over http) or send UNSIGNED-PAYLOAD (default: over https).
    var signPayload: Bool?
    /// Whether URLs the server names on another origin (a tus upload URL, a file's URL to delete)
    /// may be used; they never get the remote's credentials or headers.
    var allowCrossOrigin = false
    /// Overrides of the `[daemon]` settings of the same names, for this remote.
    var waitOnMetered: Bool?
    var waitOnBattery: Bool?
    /// `image = SPEC`: image preparation for files added to this remote without `--image`.
    var image: String?
    /// Hooks for this remote's jobs, in place of `[daemon]`'s.
    var onComplete: HookCommand?
    var onFailure: HookCommand?

    /// The files of secrets it names, by key (`~` not yet expanded).
    var secretFiles: [(key: String, path: String)] {
        [("password_file", passwordFile), ("secret_access_key_file", secretAccessKeyFile)].compactMap { key, path in
            path.map { (key, $0) }
        }
    }
}

/// The daemon's settings: `[daemon]` and the `[remote NAME]` sections of uploadd.conf.
struct DaemonConfig: Sendable, Equatable {
    /// Transfers running at once, across all jobs (`TransferSlots`).
    var maxTransfers = 2
    /// Whether small files may run beyond `maxTransfers`: while the config does not set
    /// `transfers`; one it sets is the exact limit.
    var smallFilesRunWider = true
    /// Preparations (image shrinking) at once, ahead of the uploads: one per CPU by default.
    var maxPreparations = max(ProcessInfo.processInfo.activeProcessorCount, 1)
    var retry = RetryPolicy()
    /// A transfer that moves no bytes for this long is retried.
    var stallTimeout = 60
    /// A body going out slower than `minSpeed` bytes a second for `minSpeedTime` seconds is
    /// retried (0: never), as curl's `--speed-limit`: a server that reads a trickle must not hold
    /// a transfer slot for hours. 2 KiB/s is slower than any link that works (GPRS is ~5).
    var minSpeed: Int64 = 2 << 10
    var minSpeedTime = 120
    /// The most transfers to one server while jobs for other servers wait (nil: `transfers` - 1,
    /// at least 1): a slow server cannot take every slot.
    var transfersPerServer: Int?
    var connectTimeout = 20
    /// Seconds a server may take to answer a request once it is sent.
    var responseTimeout = 300
    /// Whether uploads wait while the connection is metered (NetworkManager: a phone's hotspot).
    var waitOnMetered = true
    /// Whether uploads wait while the machine runs on battery (UPower).
    var waitOnBattery = false
    /// Records written since the last compaction before the journal is rewritten with only the
    /// live state (and never before it holds four records per job).
    var compactAfter = 10_000
    /// Bytes per second each HTTP transfer may send at most; nil is unlimited.
    var rateLimit: Int64?
    var remotes: [String: RemoteConfig] = [:]
    /// Watched folders, `[folder NAME]`, by name.
    var folders: [String: FolderRule] = [:]
    /// Commands run when a job ends (`on_complete`, `on_failure`), and how long they may take.
    var hooks = HookSettings()
    /// Whether any hook is set, in `[daemon]` or on a remote: most configs have none, and then a
    /// job's end need not look for its remote's.
    var hasHooks: Bool {
        hooks.onComplete != nil || hooks.onFailure != nil
            || remotes.values.contains { $0.onComplete != nil || $0.onFailure != nil }
    }
    /// Which endings show a desktop notification, one per batch: by default every batch's end,
    /// so that `uploadctl add ~/Videos --to nas:` says when it is done.
    var notify = NotifyPolicy.all
    /// Problems that did not stop the config from loading (unknown keys), for status and the log.
    var warnings: [String] = []

    /// One or more problems, one per line of `message`, each naming its line.
    struct LoadError: Error, CustomStringConvertible {
        var path: String
        var message: String
        var description: String {
            message.split(separator: "\n").map { "\(path): \($0)" }.joined(separator: "\n")
        }
    }

    /// Reads the config file; a missing file is the default config. The file, its folders, the
    /// hooks' programs (found on `environment`'s PATH, as they are run) and the files it names must
    /// be safe from other users (`TrustedPath`): what others could write, they could make uploadd
    /// run as the user.
    static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(LoadError) -> DaemonConfig
    {
        let text: String
        do {
            guard try TrustedPath.check(path, what: "the config file") else { return DaemonConfig() }
            text = String(decoding: try FileOps.readFile(path), as: UTF8.self)
        } catch {
            throw LoadError(path: path, message: "\(error)")
        }
        do {
            var config = try parse(text)
            let untrusted = config.untrustedFiles(searchPath: environment["PATH"])
            guard untrusted.isEmpty else { throw LoadError(path: path, message: untrusted.joined(separator: "\n")) }
            config.warnings += config.looseSecretWarnings(configPath: path)
            return config
        } catch let error as LoadError {
            throw LoadError(path: path, message: error.message)
        } catch {
            throw LoadError(path: path, message: "\(error)")
        }
    }

    /// The files the config makes uploadd run or believe that others could have written, one
    /// refusal each: the hooks' programs, the password and key files (read again, and checked
    /// again, by each job) and the CA bundles (whoever writes one can read what is sent over TLS).
    /// A file that does not exist yet is not refused here; a job that needs it finds it missing.
    func untrustedFiles(searchPath: String?) -> [String] {
        var files: [(path: String, what: String)] = []
        func hooks(_ section: String, _ onComplete: HookCommand?, _ onFailure: HookCommand?) {
            for (key, command) in [("on_complete", onComplete), ("on_failure", onFailure)] {
                guard let command else { continue }
                files.append((command.executable(searchPath: searchPath), "the \(section) \(key) program"))
            }
        }
        hooks("[daemon]", self.hooks.onComplete, self.hooks.onFailure)
        for remote in remotes.values.sorted(by: { $0.name < $1.name }) {
            let section = "[remote \(remote.name)]"
            hooks(section, remote.onComplete, remote.onFailure)
            for (key, file) in remote.secretFiles {
                files.append(((file as NSString).expandingTildeInPath, "the \(section) \(key)"))
            }
            if let caFile = remote.caFile { files.append((caFile, "the \(section) ca_file")) }
        }
        return files.compactMap { file -> String? in
            do {
                _ = try TrustedPath.check(file.path, what: file.what)
                return nil
            } catch {
                return "\(error)"
            }
        }
    }

    static func parse(_ text: String, home: String = NSHomeDirectory()) throws -> DaemonConfig {
        var syntaxErrors: [INIDocument.ParseError] = []
        let document = INIDocument(parsing: text, problems: &syntaxErrors)
        // Every problem is reported at once, lines that cannot be read among them, and any one of
        // them keeps the whole file from applying: a misspelt section must not silently put every
        // setting back to its default.
        var config = DaemonConfig()
        var errors: [String] = syntaxErrors.map(\.description)
        var daemonSection: Int?
        for section in document.sections {
            switch section.kind {
            case "daemon":
                if let first = daemonSection {
                    errors.append(
                        "line \(section.line): a second [daemon] section; merge it into the one at line \(first)")
                }
                daemonSection = daemonSection ?? section.line
                errors += config.applyDaemonSection(section)
            case "remote":
                errors += config.addRemote(section)
            case "folder":
                errors += config.addFolder(section, home: home)
            default:
                let guess =
                    Self.closest(section.kind, among: ["daemon", "remote", "folder"]).map { " (did you mean [\($0)]?)" }
                    ?? ""
                errors.append(
                    "line \(section.line): unknown section [\(section.kind)]\(guess); sections are [daemon], [remote NAME] and [folder NAME]"
                )
            }
        }
        errors += config.folderProblems()
        guard errors.isEmpty else { throw LoadError(path: "", message: errors.joined(separator: "\n")) }
        return config
    }

    /// The known word `word` is a typo of, if it is one (at most two edits away).
    static func closest(_ word: String, among known: [String]) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var previous = Array(0...b.count)
            for (i, x) in a.enumerated() {
                var current = [i + 1]
                for (j, y) in b.enumerated() {
                    current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
                }
                previous = current
            }
            return previous[b.count]
        }
        return known.map { ($0, distance(Array(word.lowercased()), Array($0))) }.filter { $0.1 <= 2 }.min {
            $0.1 < $1.1
        }?.0
    }

    /// Secrets others can read, flagged as ssh does: a config with `header =` lines (tokens,
    /// often) and password or key files that are readable by group or others.
    func looseSecretWarnings(configPath: String) -> [String] {
        func looseMode(_ path: String) -> String? {
            var info = stat()
            guard stat((path as NSString).expandingTildeInPath, &info) == 0, info.st_mode & 0o044 != 0 else {
                return nil
            }
            return String(info.st_mode & 0o777, radix: 8)
        }
        var warnings: [String] = []
        if remotes.values.contains(where: { !$0.headers.isEmpty }), let mode = looseMode(configPath) {
            warnings.append(
                "it is readable by others (mode \(mode)) and has header lines, which often carry tokens; chmod 600 \(configPath)"
            )
        }
        for remote in remotes.values.sorted(by: { $0.name < $1.name }) {
            for (_, file) in remote.secretFiles {
                if let mode = looseMode(file) {
                    warnings.append(
                        "[remote \(remote.name)]: \(file) is readable by others (mode \(mode)); chmod 600 \(file)")
                }
            }
        }
        return warnings
    }

    /// Applies `[daemon]`; returns a message for each bad value (the others still apply).
    private mutating func applyDaemonSection(_ section: INIDocument.Section) -> [String] {
        var errors: [String] = []
        for entry in section.entries {
            do {
                func number(_ range: ClosedRange<Int>) throws -> Int {
                    guard let value = Int(entry.value), range.contains(value) else {
                        throw LoadError(
                            path: "",
                            message:
                                "line \(entry.line): \(entry.key) must be a whole number from \(range.lowerBound) to \(range.upperBound)"
                        )
                    }
                    return value
                }
                switch entry.key {
                case "transfers", "max_transfers":
                    maxTransfers = try number(1...64)
                    smallFilesRunWider = false
                case "preparations", "max_preparations": maxPreparations = try number(1...64)
                case "retry_attempts": retry.maxAttempts = try number(1...1000)
                case "retry_for": retry.maxDuration = .seconds(try number(0...315_360_000))
                case "retry_max_delay": retry.maxDelay = .seconds(try number(1...86400))
                case "retry_base_delay": retry.baseDelay = .milliseconds(try number(1...600_000))
                case "stall_timeout": stallTimeout = try number(1...3600)
                case "min_speed_time": minSpeedTime = try number(1...86400)
                case "transfers_per_server": transfersPerServer = try number(1...64)
                case "min_speed":
                    do {
                        minSpeed = try ByteSize.parse(entry.value)
                    } catch {
                        throw LoadError(
                            path: "",
                            message:
                                "line \(entry.line): min_speed must be a size per second such as 2K (0 turns the rule off)"
                        )
                    }
                case "connect_timeout": connectTimeout = try number(1...600)
                case "response_timeout": responseTimeout = try number(1...86400)
                case "compact_after": compactAfter = try number(20...100_000_000)
                case "wait_on_metered", "wait_on_battery":
                    guard let value = Self.parseBool(entry.value) else {
                        throw LoadError(path: "", message: "line \(entry.line): \(entry.key) must be yes or no")
                    }
                    if entry.key == "wait_on_metered" { waitOnMetered = value } else { waitOnBattery = value }
                case "rate_limit":
                    do {
                        let rate = try ByteSize.parse(entry.value)
                        rateLimit = rate > 0 ? rate : nil
                    } catch {
                        throw LoadError(path: "", message: "line \(entry.line): rate_limit: \(error.description)")
                    }
                case "on_complete", "on_failure":
                    guard let command = HookCommand(parsing: entry.value) else {
                        throw LoadError(
                            path: "",
                            message:
                                "line \(entry.line): \(entry.key) must be a command with its arguments, quoted as in a shell (an unclosed quote?)"
                        )
                    }
                    if entry.key == "on_complete" { hooks.onComplete = command } else { hooks.onFailure = command }
                case "hook_timeout": hooks.timeout = .seconds(try number(1...86400))
                case "notify":
                    guard let value = NotifyPolicy(rawValue: entry.value.lowercased()) else {
                        throw LoadError(
                            path: "", message: "line \(entry.line): notify must be failures, all or none")
                    }
                    notify = value
                default: warnings.append(Self.unknownKey(entry, in: "[daemon]", known: Self.daemonKeys))
                }
            } catch {
                errors.append((error as? LoadError)?.message ?? "\(error)")
            }
        }
        return errors
    }

    /// Adds a `[remote NAME]`; returns a message for each problem.
    private mutating func addRemote(_ section: INIDocument.Section) -> [String] {
        guard let name = section.name, !name.isEmpty else {
            return ["line \(section.line): a remote needs a name: [remote NAME]"]
        }
        if remotes[name] != nil {
            return ["line \(section.line): a second [remote \(name)]; give each remote one section"]
        }
        var errors: [String] = []
        var remote = RemoteConfig(name: name, url: "")
        for entry in section.entries {
            do {
                func fail(_ message: String) -> LoadError {
                    LoadError(path: "", message: "line \(entry.line): [remote \(name)] \(message)")
                }
                switch entry.key {
                case "protocol":
                    guard let value = UploadProtocol(rawValue: entry.value.lowercased()) else {
                        throw fail(
                            "protocol must be one of \(UploadProtocol.allCases.map(\.rawValue).joined(separator: ", "))"
                        )
                    }
                    remote.uploadProtocol = value
                case "url": remote.url = entry.value
                case "user": remote.user = entry.value
                case "password_file": remote.passwordFile = entry.value
                case "password_credential": remote.passwordCredential = entry.value
                case "header":
                    guard let pair = HeaderSyntax.parse(entry.value) else {
                        throw fail("header must look like 'Name: value'")
                    }
                    if let refusal = HeaderSyntax.refusal(ofName: pair.name) { throw fail(refusal) }
                    remote.headers.append(pair)
                case "field":
                    guard let pair = FieldSyntax.parse(entry.value) else {
                        throw fail("field must look like 'name=value'")
                    }
                    remote.fields.append(pair)
                case "file_field": remote.fileField = entry.value
                case "image":
                    do { _ = try ImageSpec.parse(entry.value) } catch { throw fail(error.description) }
                    remote.image = entry.value
                case "ca_file": remote.caFile = entry.value
                case "chunk_size":
                    do { remote.chunkSize = try ChunkSize.parse(entry.value) } catch {
                        throw fail("chunk_size: \(error.description)")
                    }
                case "result_url_pointer": remote.resultURLPointer = entry.value
                case "endpoint": remote.endpoint = entry.value
                case "region": remote.region = entry.value
                case "access_key_id": remote.accessKeyID = entry.value
                case "secret_access_key_file": remote.secretAccessKeyFile = entry.value
                case "secret_access_key_credential": remote.secretAccessKeyCredential = entry.value
                case "path_style", "sign_payload", "allow_cross_origin", "wait_on_metered", "wait_on_battery", "http2":
                    guard let value = Self.parseBool(entry.value) else {
                        throw fail("\(entry.key) must be true or false")
                    }
                    switch entry.key {
                    case "path_style": remote.pathStyle = value
                    case "sign_payload": remote.signPayload = value
                    case "wait_on_metered": remote.waitOnMetered = value
                    case "wait_on_battery": remote.waitOnBattery = value
                    case "http2": remote.http2 = value
                    default: remote.allowCrossOrigin = value
                    }
                case "multipart_threshold":
                    do { remote.multipartThreshold = try ByteSize.parse(entry.value) } catch {
                        throw fail(error.description)
                    }
                case "on_complete", "on_failure":
                    guard let command = HookCommand(parsing: entry.value) else {
                        throw fail("\(entry.key) must be a command with its arguments, quoted as in a shell")
                    }
                    if entry.key == "on_complete" { remote.onComplete = command } else { remote.onFailure = command }
                default: warnings.append(Self.unknownKey(entry, in: "[remote \(name)]", known: Self.remoteKeys))
                }
            } catch {
                errors.append((error as? LoadError)?.message ?? "\(error)")
            }
        }
        if remote.url.isEmpty { errors.append("line \(section.line): [remote \(name)] needs a url") }
        remotes[name] = remote
        return errors
    }
}

extension DaemonConfig {
    /// Every key `[daemon]` reads (aliases included), for typo hints and the man page's check.
    static let daemonKeys = [
        "transfers", "max_transfers", "preparations", "max_preparations", "retry_attempts", "retry_for",
        "retry_max_delay", "retry_base_delay", "stall_timeout", "min_speed", "min_speed_time",
        "transfers_per_server", "connect_timeout", "response_timeout",
        "compact_after", "wait_on_metered", "wait_on_battery", "rate_limit", "on_complete", "on_failure",
        "hook_timeout", "notify",
    ]
    /// Every key `[remote NAME]` reads.
    static let remoteKeys = [
        "protocol", "url", "user", "password_file", "password_credential", "header", "field", "file_field",
        "image", "ca_file", "chunk_size", "result_url_pointer", "endpoint", "region", "access_key_id",
        "secret_access_key_file", "secret_access_key_credential", "path_style", "sign_payload",
        "allow_cross_origin", "wait_on_metered", "wait_on_battery", "multipart_threshold", "on_complete",
        "on_failure", "http2",
    ]

    /// The warning for a key nobody reads, with the known key it is likely a typo of.
    static func unknownKey(_ entry: (key: String, value: String, line: Int), in section: String, known: [String])
        -> String
    {
        let guess = closest(entry.key, among: known).map { " (did you mean \($0)?)" } ?? ""
        return "line \(entry.line): unknown key '\(entry.key)' in \(section) ignored\(guess)"
    }

    /// `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`, as systemd reads booleans.
    static func parseBool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: return nil
        }
    }
}
