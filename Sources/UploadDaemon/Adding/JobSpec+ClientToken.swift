import UploadCore
import UploadWire

/// A client token names one add, as an idempotency key does: an add sent again with the same
/// token and other parameters is another upload, refused rather than silently dropped.
extension JobSpec {
    /// Refuses this add when it asks for another upload than `earlier`, the add that took `token`
    /// first (job `job`; nil: one before it in the same request).
    func checkSameAdd(as earlier: JobSpec, token: String, job: JobID?) throws(RPCError) {
        guard let difference = Self.differences(self, earlier).first else { return }
        let taken = job.map { "job \($0)" } ?? "another file of this add"
        throw RPCError(
            code: RPCError.invalidParamsCode,
            message:
                "client token '\(token)' was given for \(taken), with another \(difference): a token names one "
                + "upload; give this one a token of its own, or send the same add to have \(taken)'s answer again")
    }

    /// What a person would call the parameters in which two adds differ. Not compared: what may
    /// change after an add without making it another upload (its priority, its batch, the umask of
    /// the shell that sent it).
    private static func differences(_ new: JobSpec, _ old: JobSpec) -> [String] {
        var differences: [String] = []
        if new.source != old.source { differences.append("file (\(old.source) then \(new.source))") }
        if new.destination != old.destination { differences.append("destination") }
        if new.uploadProtocol != old.uploadProtocol { differences.append("protocol") }
        if new.headers != old.headers || new.fields != old.fields || new.fileField != old.fileField {
            differences.append("set of headers or form fields")
        }
        if new.user != old.user { differences.append("user") }
        if new.chunkSize != old.chunkSize { differences.append("chunk size") }
        if new.snapshot != old.snapshot { differences.append("snapshot mode") }
        if new.preparation != old.preparation { differences.append("image SPEC") }
        if (new.metadata ?? [:]) != (old.metadata ?? [:]) { differences.append("metadata") }
        return differences
    }
}
