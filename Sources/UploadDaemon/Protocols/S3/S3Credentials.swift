import Foundation
import UploadCore
import UploadPlatform
import UploadWire

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
/// 3. the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), then
///    the config file (`AWS_CONFIG_FILE`, else `~/.aws/config`), profile `AWS_PROFILE`, else
///    `default`, as aws-cli reads them (`AWSSharedFiles`).
struct S3CredentialResolver {
    var environment: [String: String]

    func resolve(remote: RemoteConfig?) throws(TransferFailure) -> S3Credentials {
        if let remote, let fromRemote = try fromRemote(remote) { return fromRemote }
        if let fromEnvironment = try fromEnvironment() { return fromEnvironment }
        let shared = AWSSharedFiles(environment: environment)
        let profile = shared.profile
        let path = shared.credentialsPath
        for (file, values) in [(path, shared.credentialValues()), (shared.configPath, shared.configValues())] {
            if let key = values["aws_access_key_id"], let secret = values["aws_secret_access_key"] {
                return S3Credentials(
                    accessKeyID: key, secretAccessKey: secret, sessionToken: values["aws_session_token"],
                    source: "\(file) [\(profile)]")
            }
        }
        let remoteHint = remote.map { "access_key_id and secret_access_key_file in [remote \($0.name)], " } ?? ""
        throw .config(
            "no S3 credentials found: looked for \(remoteHint)AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in uploadd's environment, and profile [\(profile)] in \(path) and \(shared.configPath); set one of them (a remote's secret can also come from secret_access_key_credential with LoadCredential= in the unit)"
        )
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
            secret = try readSecret((file as NSString).expandingTildeInPath, remote: remote, checked: true)
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

    /// `checked`: a file the config names, which must be safe from other users (`TrustedPath`), as
    /// a password file must; a systemd credential's folder is systemd's.
    private func readSecret(_ path: String, remote: RemoteConfig, checked: Bool = false) throws(TransferFailure)
        -> String
    {
        do {
            let bytes =
                checked
                ? try TrustedPath.readFile(path, what: "the [remote \(remote.name)] secret_access_key_file")
                : try FileOps.readFile(path)
            return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch let refusal as TrustedPath.Refusal {
            throw .config(refusal.description)
        } catch {
            throw .config("cannot read the secret access key of remote '\(remote.name)': \(error)")
        }
    }
}
