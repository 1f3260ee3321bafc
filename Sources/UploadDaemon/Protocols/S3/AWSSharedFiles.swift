import Foundation
import UploadPlatform

/// The AWS tools' shared files, read the way aws-cli reads them: `~/.aws/credentials` (keys) and
/// `~/.aws/config` (`region`, `endpoint_url`, and keys as well), profile `AWS_PROFILE` else
/// `default`, the paths moved by `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE`.
struct AWSSharedFiles {
    var environment: [String: String]

    var profile: String { nonEmpty("AWS_PROFILE") ?? "default" }

    var credentialsPath: String { path(variable: "AWS_SHARED_CREDENTIALS_FILE", default: ".aws/credentials") }
    var configPath: String { path(variable: "AWS_CONFIG_FILE", default: ".aws/config") }

    /// The profile's settings in `~/.aws/config` (empty when the file or profile is missing).
    func configValues() -> [String: String] { values(at: configPath) }

    /// The profile's settings in `~/.aws/credentials`.
    func credentialValues() -> [String: String] { values(at: credentialsPath) }

    private func values(at path: String) -> [String: String] {
        guard let bytes = try? FileOps.readFile(path) else { return [:] }
        return Self.parse(String(decoding: bytes, as: UTF8.self), profile: profile)
    }

    private func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }

    private func path(variable: String, default relative: String) -> String {
        if let file = nonEmpty(variable) { return (file as NSString).expandingTildeInPath }
        let home = nonEmpty("HOME") ?? NSHomeDirectory()
        return home + "/" + relative
    }

    /// The keys of `profile`: `[name]` or `[profile name]` sections, `key = value` lines (keys
    /// lowercased), `#` and `;` comments; indented lines (aws-cli's nested `s3 =` settings) are
    /// skipped. Parsed here rather than with INIDocument, which reads `[kind name]` headers and
    /// refuses lines the AWS tools accept.
    static func parse(_ text: String, profile: String) -> [String: String] {
        var section: String?
        var values: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
            if rawLine.first == " " || rawLine.first == "\t" { continue }
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                var name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                if name.hasPrefix("profile ") { name = name.dropFirst(8).trimmingCharacters(in: .whitespaces) }
                section = name
                continue
            }
            guard section == profile, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if !value.isEmpty { values[key] = value }
        }
        return values
    }
}
