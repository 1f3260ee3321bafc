import Foundation
import UploadCore

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
}

/// The daemon's settings: `[daemon]` and the `[remote NAME]` sections of uploadd.conf.
struct DaemonConfig: Sendable, Equatable {
    /// Transfers running at once, across all jobs.
    var maxTransfers = 2
    var retry = RetryPolicy()
    /// A transfer that moves no bytes for this long is retried.
    var stallTimeout = 60
    var connectTimeout = 20
    /// Bytes per second each HTTP transfer may send at most; nil is unlimited.
    var rateLimit: Int64?
    var remotes: [String: RemoteConfig] = [:]
    /// Problems that did not stop the config from loading (unknown keys), for status and the log.
    var warnings: [String] = []

    struct LoadError: Error, CustomStringConvertible {
        var path: String
        var message: String
        var description: String { "\(path): \(message)" }
    }

    /// Reads the config file; a missing file is the default config.
    static func load(path: String) throws(LoadError) -> DaemonConfig {
        guard FileManager.default.fileExists(atPath: path) else { return DaemonConfig() }
        let text: String
        do {
            text = String(decoding: try FileOps.readFile(path), as: UTF8.self)
        } catch {
            throw LoadError(path: path, message: "\(error)")
        }
        do {
            return try parse(text)
        } catch let error as LoadError {
            throw LoadError(path: path, message: error.message)
        } catch {
            throw LoadError(path: path, message: "\(error)")
        }
    }

    static func parse(_ text: String) throws -> DaemonConfig {
        let document: INIDocument
        do {
            document = try INIDocument(parsing: text)
        } catch {
            throw LoadError(path: "", message: error.description)
        }
        var config = DaemonConfig()
        for section in document.sections {
            switch section.kind {
            case "daemon": try config.applyDaemonSection(section)
            case "remote": try config.addRemote(section)
            default:
                config.warnings.append("line \(section.line): unknown section [\(section.kind)] ignored")
            }
        }
        return config
    }

    private mutating func applyDaemonSection(_ section: INIDocument.Section) throws {
        for entry in section.entries {
            func number(_ range: ClosedRange<Int>) throws -> Int {
                guard let value = Int(entry.value), range.contains(value) else {
                    throw LoadError(
                        path: "",
                        message: "line \(entry.line): \(entry.key) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
                }
                return value
            }
            switch entry.key {
            case "transfers", "max_transfers": maxTransfers = try number(1...64)
            case "retry_attempts": retry.maxAttempts = try number(1...1000)
            case "retry_max_delay": retry.maxDelay = .seconds(try number(1...86400))
            case "retry_base_delay": retry.baseDelay = .milliseconds(try number(1...600_000))
            case "stall_timeout": stallTimeout = try number(1...3600)
            case "connect_timeout": connectTimeout = try number(1...600)
            case "rate_limit":
                do {
                    let rate = try ByteSize.parse(entry.value)
                    rateLimit = rate > 0 ? rate : nil
                } catch {
                    throw LoadError(path: "", message: "line \(entry.line): rate_limit: \(error.description)")
                }
            default: warnings.append("line \(entry.line): unknown key '\(entry.key)' in [daemon] ignored")
            }
        }
    }

    private mutating func addRemote(_ section: INIDocument.Section) throws {
        guard let name = section.name, !name.isEmpty else {
            throw LoadError(path: "", message: "line \(section.line): a remote needs a name: [remote NAME]")
        }
        var remote = RemoteConfig(name: name, url: "")
        for entry in section.entries {
            func fail(_ message: String) -> LoadError {
                LoadError(path: "", message: "line \(entry.line): [remote \(name)] \(message)")
            }
            switch entry.key {
            case "protocol":
                guard let value = UploadProtocol(rawValue: entry.value.lowercased()) else {
                    throw fail("protocol must be one of \(UploadProtocol.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                remote.uploadProtocol = value
            case "url": remote.url = entry.value
            case "user": remote.user = entry.value
            case "password_file": remote.passwordFile = entry.value
            case "password_credential": remote.passwordCredential = entry.value
            case "header":
                guard let pair = HeaderSyntax.parse(entry.value) else { throw fail("header must look like 'Name: value'") }
                remote.headers.append(pair)
            case "field":
                guard let pair = FieldSyntax.parse(entry.value) else { throw fail("field must look like 'name=value'") }
                remote.fields.append(pair)
            case "file_field": remote.fileField = entry.value
            case "ca_file": remote.caFile = entry.value
            case "chunk_size":
                do { remote.chunkSize = try ByteSize.parse(entry.value) } catch { throw fail(error.description) }
            case "result_url_pointer": remote.resultURLPointer = entry.value
            case "endpoint": remote.endpoint = entry.value
            case "region": remote.region = entry.value
            case "access_key_id": remote.accessKeyID = entry.value
            case "secret_access_key_file": remote.secretAccessKeyFile = entry.value
            case "secret_access_key_credential": remote.secretAccessKeyCredential = entry.value
            case "path_style", "sign_payload":
                guard let value = Self.parseBool(entry.value) else { throw fail("\(entry.key) must be true or false") }
                if entry.key == "path_style" { remote.pathStyle = value } else { remote.signPayload = value }
            case "multipart_threshold":
                do { remote.multipartThreshold = try ByteSize.parse(entry.value) } catch { throw fail(error.description) }
            default: warnings.append("line \(entry.line): unknown key '\(entry.key)' in [remote \(name)] ignored")
            }
        }
        guard !remote.url.isEmpty else {
            throw LoadError(path: "", message: "line \(section.line): [remote \(name)] needs a url")
        }
        remotes[name] = remote
    }
}
