import Foundation
import UploadCore

/// An access key pair (and a session token for temporary credentials), with where it came from so
/// that an error can say which secret the server refused. Read when an attempt starts; never journaled.
struct S3Credentials: Sendable, Equatable {
    var accessKeyID: String
    var secretAccessKey: String
    var sessionToken: String?
    /// `remote 'NAME'`, `the environment (AWS_ACCESS_KEY_ID)`, `~/.aws/credentials [default]`.
    var source: String
}

/// Finds S3 credentials; the first place that has them wins:
/// 1. the remote's `access_key_id` with `secret_access_key_file` or `secret_access_key_credential`
///    (read from `$CREDENTIALS_DIRECTORY/NAME`);
/// 2. `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`;
/// 3. the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), profile
///    `AWS_PROFILE`, else `default`.
struct S3CredentialResolver {
    var environment: [String: String]

    func resolve(remote: RemoteConfig?) throws(TransferFailure) -> S3Credentials {
        if let remote, let fromRemote = try fromRemote(remote) { return fromRemote }
        if let fromEnvironment = try fromEnvironment() { return fromEnvironment }
        let (path, profile) = sharedFileLocation
        if let text = try? String(decoding: FileOps.readFile(path), as: UTF8.self) {
            if let found = Self.parseSharedCredentials(text, profile: profile) {
                return S3Credentials(
                    accessKeyID: found.accessKeyID, secretAccessKey: found.secretAccessKey,
                    sessionToken: found.sessionToken, source: "\(path) [\(profile)]")
            }
        }
        let remoteHint = remote.map { "access_key_id and secret_access_key_file in [remote \($0.name)], " } ?? ""
        throw .config(
            "no S3 credentials found: looked for \(remoteHint)AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in uploadd's environment, and profile [\(profile)] in \(path); set one of them (a remote's secret can also come from secret_access_key_credential with LoadCredential= in the unit)"
        )
    }

    /// The shared credentials file and the profile to read from it.
    var sharedFileLocation: (path: String, profile: String) {
        let profile = environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        if let file = environment["AWS_SHARED_CREDENTIALS_FILE"], !file.isEmpty {
            return ((file as NSString).expandingTildeInPath, profile)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return (home + "/.aws/credentials", profile)
    }

    private func fromRemote(_ remote: RemoteConfig) throws(TransferFailure) -> S3Credentials? {
        let hasSecretSource = remote.secretAccessKeyFile != nil || remote.secretAccessKeyCredential != nil
        guard let accessKeyID = remote.accessKeyID, !accessKeyID.isEmpty else {
            if hasSecretSource {
                throw .config("[remote \(remote.name)] names a secret access key but no access_key_id")
            }
            return nil
        }
        let secret: String
        if let name = remote.secretAccessKeyCredential {
            guard let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty else {
                throw .config(
                    "remote '\(remote.name)' names the credential '\(name)', but uploadd was not given credentials (LoadCredential= in the unit)"
                )
            }
            secret = try readSecret(directory + "/" + name, remote: remote)
        } else if let file = remote.secretAccessKeyFile {
            secret = try readSecret((file as NSString).expandingTildeInPath, remote: remote)
        } else {
            throw .config(
                "[remote \(remote.name)] has access_key_id but no secret_access_key_file or secret_access_key_credential"
            )
        }
        guard !secret.isEmpty else { throw .config("the secret access key of remote '\(remote.name)' is empty") }
        return S3Credentials(
            accessKeyID: accessKeyID, secretAccessKey: secret, sessionToken: nil, source: "remote '\(remote.name)'")
    }

    private func fromEnvironment() throws(TransferFailure) -> S3Credentials? {
        let key = environment["AWS_ACCESS_KEY_ID"] ?? ""
        let secret = environment["AWS_SECRET_ACCESS_KEY"] ?? ""
        if key.isEmpty && secret.isEmpty { return nil }
        guard !key.isEmpty, !secret.isEmpty else {
            throw .config(
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set in uploadd's environment, or neither")
        }
        let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        return S3Credentials(
            accessKeyID: key, secretAccessKey: secret, sessionToken: token,
            source: "the environment (AWS_ACCESS_KEY_ID)")
    }

    private func readSecret(_ path: String, remote: RemoteConfig) throws(TransferFailure) -> String {
        do {
            return String(decoding: try FileOps.readFile(path), as: UTF8.self).trimmingCharacters(
                in: .whitespacesAndNewlines)
        } catch {
            throw .config("cannot read the secret access key of remote '\(remote.name)': \(error)")
        }
    }

    /// The keys of `profile` in an AWS shared credentials file: `[name]` sections (`[profile name]`
    /// is accepted too, as in ~/.aws/config), `key = value` lines, `#` and `;` comments. Parsed
    /// here rather than with INIDocument, which reads `[kind name]` headers and rejects lines the
    /// AWS tools accept.
    static func parseSharedCredentials(_ text: String, profile: String) -> S3Credentials? {
        var section: String?
        var values: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
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
            values[key] = value
        }
        guard let key = values["aws_access_key_id"], !key.isEmpty, let secret = values["aws_secret_access_key"],
            !secret.isEmpty
        else { return nil }
        let token = values["aws_session_token"].flatMap { $0.isEmpty ? nil : $0 }
        return S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: token, source: "[\(profile)]")
    }
}
