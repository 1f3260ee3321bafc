import UploadCore
import UploadWire

/// What the config says of a job being added.
extension DaemonConfig {
    /// What a remote's settings add to a job when it is added: its `image` SPEC, unless the job has
    /// its own. Journaled with the job, so that a resume prepares with the same SPEC.
    func applyRemoteDefaults(_ spec: inout JobSpec) {
        guard spec.preparation.isEmpty, case .remote(let name, _)? = try? Destination.parse(spec.destination),
            let image = remotes[name]?.image
        else { return }
        spec.preparation = [PreparationRequest(step: "image", options: image)]
    }

    /// What only the config can tell about a destination, checked at `add` rather than when the
    /// job runs: that a named remote exists, and that the protocol fits the remote's URL; and that
    /// the preparation steps asked for exist and take their options.
    func check(_ spec: JobSpec, preparer: Preparer) throws(RPCError) {
        do {
            try preparer.validate(spec.preparation)
        } catch {
            throw RPCError(code: RPCError.invalidParamsCode, message: error.message)
        }
        guard case .remote(let name, let path)? = try? Destination.parse(spec.destination) else { return }
        func invalid(_ message: String) -> RPCError { RPCError(code: RPCError.invalidParamsCode, message: message) }
        guard let remote = remotes[name] else {
            let known = remotes.keys.sorted()
            let hint = known.isEmpty ? "no remotes are configured" : "configured: \(known.joined(separator: ", "))"
            throw invalid(
                "no remote named '\(name)' (\(hint)); add a [remote \(name)] section to the config, or give a URL: http(s)://, s3://, file:///"
            )
        }
        guard let resolved = try? Destination.parse(TargetResolver.join(remote.url, path)) else {
            throw invalid("remote '\(name)' has a url uploadd cannot use: \(Redaction.redactURL(remote.url))")
        }
        let uploadProtocol = spec.uploadProtocol == .auto ? remote.uploadProtocol : spec.uploadProtocol
        if let message = JobSpecBuilder.mismatch(uploadProtocol, resolved) { throw invalid(message) }
    }
}
