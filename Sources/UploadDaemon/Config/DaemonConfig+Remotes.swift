import UploadCore
import UploadWire

/// The remotes as `uploadctl remotes` lists them: names, protocols, redacted URLs, users, and
/// where each secret comes from (never the secret).
extension DaemonConfig {
    var remoteInfos: [RemoteInfo] {
        remotes.values.sorted { $0.name < $1.name }.map { remote in
            let secret =
                remote.passwordCredential.map { "credential \($0)" } ?? remote.passwordFile.map { "file \($0)" }
                ?? remote.secretAccessKeyCredential.map { "credential \($0)" }
                ?? remote.secretAccessKeyFile.map { "file \($0)" }
            return RemoteInfo(
                name: remote.name, protocol: remote.uploadProtocol, url: Redaction.redactURL(remote.url),
                user: remote.user ?? remote.accessKeyID, secretSource: secret)
        }
    }
}
