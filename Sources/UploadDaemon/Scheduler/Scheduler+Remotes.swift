import UploadWire

/// `uploadctl remotes`: the configured remotes, and a check that uploads to one can work.
extension Scheduler {
    /// The configured remotes, as `uploadctl remotes` lists them.
    func remotes() -> [RemoteInfo] { config.remoteInfos }

    /// Checks a remote (`RemoteCheck`), off the actor's state: the config of this moment.
    func testRemote(named name: String) async throws(RPCError) -> RemoteTestResult {
        try await RemoteCheck(config: config, environment: dependencies.environment, http: dependencies.http).run(
            named: name)
    }
}
