import Foundation
import UploadCore
import UploadWire

/// A watched folder, `[folder NAME]` in uploadd.conf: the files that appear in `path` are
/// uploaded to `to`, each once, whole, after it has been quiet for `settle`.
struct FolderRule: Sendable, Equatable {
    var name: String
    /// Absolute, with `~` expanded.
    var path: String
    /// `to`: a URL or `remote:path`, as `add --to`; a subfolder's files go under its path.
    var destination: String
    var recursive = true
    /// Globs a file's name must match one of (empty: every file).
    var include: [String] = []
    /// Globs of names (or paths inside the folder) left alone: hidden files, editors' and
    /// browsers' partial files.
    var exclude = FolderRule.defaultExcludes
    /// Whether symlinks inside the folder are followed (to files only, never into folders).
    var followSymlinks = false
    /// Whether a folder other users may write to is watched: they could drop files there that
    /// would then be uploaded as the user.
    var trustOthers = false
    /// What becomes of a file once its upload's end is durable.
    var after = FolderAfter.keep
    /// Whether a new version of a file is told by its size and modification time (`metadata`)
    /// or by its content's SHA-256 (`content`: a file touched, or saved again unchanged, does
    /// not go again).
    var matchContent = false
    /// How long a file must have been quiet (no write, no rename) before it is taken.
    var settle: Duration = .seconds(2)
    /// The options every job of the folder gets, as `add` would give them.
    var uploadProtocol: UploadProtocol?
    var headers: [String] = []
    var fields: [String] = []
    var fileField: String?
    var chunkSize: String?
    var image: String?
    var snapshot: SnapshotMode?
    var priority: Int?
    /// The line of its section, for messages.
    var line = 0

    static let defaultExcludes = [".*", "*~", "*.tmp", "*.part", "*.crdownload", "*.swp"]

    /// Two rules are the same rule when they watch and upload alike: `line` is left out, so that
    /// moving a section in the file does not make `reload` drop the folder's watches and rescan.
    static func == (a: FolderRule, b: FolderRule) -> Bool {
        a.name == b.name && a.path == b.path && a.destination == b.destination && a.recursive == b.recursive
            && a.include == b.include && a.exclude == b.exclude && a.followSymlinks == b.followSymlinks
            && a.trustOthers == b.trustOthers && a.settle == b.settle && a.after == b.after
            && a.matchContent == b.matchContent
            && a.uploadProtocol == b.uploadProtocol
            && a.headers == b.headers && a.fields == b.fields && a.fileField == b.fileField
            && a.chunkSize == b.chunkSize && a.image == b.image && a.snapshot == b.snapshot
            && a.priority == b.priority
    }

    /// Every key `[folder NAME]` reads.
    static let keys = [
        "path", "to", "recursive", "include", "exclude", "follow", "trust_others", "settle", "after", "match",
        "protocol",
        "header", "field", "file_field", "chunk_size", "image", "snapshot", "priority",
    ]

    /// The add of the file at `relativePath` inside the folder: its job's source, destination
    /// (under the file's subfolder, as `add DIR` puts it) and options.
    func addParams(relativePath: String, identity: SourceIdentity) -> AddParams {
        let slash = relativePath.utf8.lastIndex(of: UInt8(ascii: "/"))
        let folder = slash.map { String(relativePath[..<$0]) } ?? ""
        // `to` is a folder (checked at load), which every subfolder can go under.
        var params = AddParams(
            source: path + "/" + relativePath,
            destination: Destination.under(destination, folder: folder) ?? destination)
        params.sourceIdentity = identity
        params.protocol = uploadProtocol
        params.headers = headers.isEmpty ? nil : headers
        params.fields = fields.isEmpty ? nil : fields
        params.fileField = fileField
        params.chunkSize = chunkSize
        params.image = image
        params.snapshot = snapshot
        params.priority = priority
        return params
    }

    /// Whether a file named `name`, at `relativePath` inside the folder, is one to take.
    func takes(name: String, relativePath: String) -> Bool {
        let matches = { (glob: String) in
            fnmatch(glob, name, 0) == 0 || fnmatch(glob, relativePath, FNM_PATHNAME) == 0
        }
        return (include.isEmpty || include.contains(where: matches)) && !exclude.contains(where: matches)
    }
}

extension DaemonConfig {
    /// Adds a `[folder NAME]`; returns a message for each problem.
    mutating func addFolder(_ section: INIDocument.Section, home: String) -> [String] {
        guard let name = section.name, !name.isEmpty else {
            return ["line \(section.line): a watched folder needs a name: [folder NAME]"]
        }
        guard !name.contains("/"), name.utf8.count <= 64 else {
            return ["line \(section.line): [folder \(name)]: a name has no '/' and at most 64 bytes"]
        }
        if folders[name] != nil {
            return ["line \(section.line): a second [folder \(name)]; give each folder one section"]
        }
        var errors: [String] = []
        var rule = FolderRule(name: name, path: "", destination: "", line: section.line)
        for entry in section.entries {
            func fail(_ message: String) -> String { "line \(entry.line): [folder \(name)] \(message)" }
            func flag() -> Bool? {
                let value = Self.parseBool(entry.value)
                if value == nil { errors.append(fail("\(entry.key) must be yes or no")) }
                return value
            }
            switch entry.key {
            case "path":
                guard let path = Self.folderPath(entry.value, home: home) else {
                    errors.append(fail("path must be absolute or start with ~/ (it is \(entry.value))"))
                    continue
                }
                rule.path = path
            case "to":
                do { _ = try Destination.parse(entry.value) } catch { errors.append(fail("to: \(error.description)")) }
                if !Destination.isFolder(entry.value) {
                    errors.append(
                        fail(
                            "to must be a folder, each file going under it by its name: end it with / (to = \(entry.value)/)"
                        ))
                }
                rule.destination = entry.value
            case "recursive": rule.recursive = flag() ?? rule.recursive
            case "follow": rule.followSymlinks = flag() ?? rule.followSymlinks
            case "trust_others": rule.trustOthers = flag() ?? rule.trustOthers
            case "include": rule.include = entry.value.split(separator: " ").map(String.init)
            case "exclude": rule.exclude = entry.value.split(separator: " ").map(String.init)
            case "settle":
                guard let settle = Self.parseSettle(entry.value) else {
                    errors.append(fail("settle must be a time from 100ms to 1h, such as 2s or 500ms"))
                    continue
                }
                rule.settle = settle
            case "match":
                switch entry.value {
                case "metadata": rule.matchContent = false
                case "content": rule.matchContent = true
                default: errors.append(fail("match must be metadata or content (it is \(entry.value))"))
                }
            case "after":
                switch entry.value {
                case "keep": rule.after = .keep
                case "delete": rule.after = .delete
                case let value where value.hasPrefix("move:"):
                    guard let folder = Self.folderPath(String(value.dropFirst(5)), home: home) else {
                        errors.append(fail("after = move:DIR needs DIR absolute or starting with ~/ (it is \(value))"))
                        continue
                    }
                    rule.after = .move(folder)
                default:
                    errors.append(fail("after must be keep, delete or move:DIR (it is \(entry.value))"))
                }
            case "protocol":
                guard let value = UploadProtocol(rawValue: entry.value.lowercased()) else {
                    errors.append(
                        fail(
                            "protocol must be one of \(UploadProtocol.allCases.map(\.rawValue).joined(separator: ", "))"
                        ))
                    continue
                }
                rule.uploadProtocol = value
            case "header":
                guard let pair = HeaderSyntax.parse(entry.value) else {
                    errors.append(fail("header must look like 'Name: value'"))
                    continue
                }
                if let refusal = HeaderSyntax.refusal(ofName: pair.name) { errors.append(fail(refusal)) }
                rule.headers.append(entry.value)
            case "field":
                guard FieldSyntax.parse(entry.value) != nil else {
                    errors.append(fail("field must look like 'name=value'"))
                    continue
                }
                rule.fields.append(entry.value)
            case "file_field": rule.fileField = entry.value
            case "chunk_size":
                do { _ = try ChunkSize.parse(entry.value) } catch {
                    errors.append(fail("chunk_size: \(error.description)"))
                }
                rule.chunkSize = entry.value
            case "image":
                do { _ = try ImageSpec.parse(entry.value) } catch { errors.append(fail(error.description)) }
                rule.image = entry.value
            case "snapshot":
                guard let mode = SnapshotMode(rawValue: entry.value.lowercased()) else {
                    errors.append(fail("snapshot must be auto, copy or none"))
                    continue
                }
                rule.snapshot = mode
            case "priority":
                guard let priority = Int(entry.value), (-1000...1000).contains(priority) else {
                    errors.append(fail("priority must be a whole number from -1000 to 1000"))
                    continue
                }
                rule.priority = priority
            default: warnings.append(Self.unknownKey(entry, in: "[folder \(name)]", known: FolderRule.keys))
            }
        }
        if rule.path.isEmpty { errors.append("line \(section.line): [folder \(name)] needs a path") }
        if rule.destination.isEmpty { errors.append("line \(section.line): [folder \(name)] needs a 'to' destination") }
        if case .move(let folder) = rule.after, !rule.path.isEmpty,
            folder == rule.path || folder.hasPrefix(rule.path == "/" ? "/" : rule.path + "/")
        {
            errors.append(
                "line \(section.line): [folder \(name)] after = move:\(folder) is inside the watched folder; move files out of it"
            )
        }
        folders[name] = rule
        return errors
    }

    /// What only the whole file can tell: that a folder's remote exists, and that no two folders
    /// watch the same files.
    func folderProblems() -> [String] {
        var problems: [String] = []
        let rules = folders.values.sorted { $0.line < $1.line }
        for rule in rules {
            if case .remote(let remote, _)? = try? Destination.parse(rule.destination), remotes[remote] == nil {
                problems.append(
                    "line \(rule.line): [folder \(rule.name)] sends to '\(remote):', but no [remote \(remote)] is configured"
                )
            }
            for other in rules where other.line < rule.line {
                let inside = { (a: FolderRule, b: FolderRule) in
                    a.path == b.path || (b.recursive && a.path.hasPrefix(b.path == "/" ? "/" : b.path + "/"))
                }
                if inside(rule, other) || inside(other, rule) {
                    problems.append(
                        "line \(rule.line): [folder \(rule.name)] watches files [folder \(other.name)] (line \(other.line)) watches too; give each file one folder"
                    )
                }
            }
        }
        return problems
    }

    /// An absolute path, or one starting with `~/`, without a trailing slash; nil for a relative
    /// one.
    static func folderPath(_ text: String, home: String) -> String? {
        let expanded = text == "~" || text.hasPrefix("~/") ? home + text.dropFirst() : text
        guard expanded.hasPrefix("/") else { return nil }
        return expanded.count > 1 && expanded.hasSuffix("/") ? String(expanded.dropLast()) : expanded
    }

    /// `2s`, `500ms`, `1.5m`, `1h` or a number of seconds, from 100 ms to an hour: decimal digits
    /// only (`Double` alone would take `0x10`, `1e3` and `inf`).
    static func parseSettle(_ text: String) -> Duration? {
        let units: [(suffix: String, milliseconds: Double)] = [
            ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("", 1000),
        ]
        for unit in units where text.hasSuffix(unit.suffix) {
            let digits = text.dropLast(unit.suffix.count)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                let number = Double(digits)
            else { continue }
            let milliseconds = number * unit.milliseconds
            guard (100...3_600_000).contains(milliseconds) else { return nil }
            return .milliseconds(Int64(milliseconds))
        }
        return nil
    }
}

/// `after` of a `[folder NAME]`: what becomes of a file once its upload's end is durable.
enum FolderAfter: Sendable, Equatable {
    case keep
    case delete
    /// Into this folder (made when missing), under the file's name; another name when one is
    /// there already.
    case move(String)

    /// As a job keeps it (`JobSpec.folderAfter`): nil for `keep`.
    var journalText: String? {
        switch self {
        case .keep: nil
        case .delete: "delete"
        case .move(let folder): "move:" + folder
        }
    }

    /// From a job's `folderAfter`; nil for none, or for one this daemon does not know.
    init?(journalText: String?) {
        switch journalText {
        case "delete"?: self = .delete
        case let text? where text.hasPrefix("move:/"): self = .move(String(text.dropFirst(5)))
        default: return nil
        }
    }
}
