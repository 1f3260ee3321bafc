import Foundation
import Glibc
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// `uploadctl remotes`: the configured remotes, and a check that uploads to one can work.
extension Scheduler {
    func remotes() -> [RemoteInfo] {
        config.remotes.values.sorted { $0.name < $1.name }.map { remote in
            let secret =
                remote.passwordCredential.map { "credential \($0)" } ?? remote.passwordFile.map { "file \($0)" }
                ?? remote.secretAccessKeyCredential.map { "credential \($0)" }
                ?? remote.secretAccessKeyFile.map { "file \($0)" }
            return RemoteInfo(
                name: remote.name, protocol: remote.uploadProtocol, url: Redaction.redactURL(remote.url),
                user: remote.user ?? remote.accessKeyID, secretSource: secret)
        }
    }

    /// Checks a remote (`RemoteCheck`), off the actor's state: the config of this moment.
    func testRemote(named name: String) async throws(RPCError) -> RemoteTestResult {
        try await RemoteCheck(config: config, environment: dependencies.environment, http: dependencies.http).run(
            named: name)
    }
}
