import UploadCore
import UploadWire

/// A client token names one add, as an idempotency key does (Stripe's, AWS's): an add sent again
/// with the same token gets the job the first made, and one whose parameters differ is refused,
/// for it is another upload that would silently never happen.
extension Scheduler {
    /// The job an add with `spec`'s token already made; nil when the token is new (or its job is
    /// gone). Throws when that job was asked with other parameters.
    func jobAlreadyAdded(for spec: JobSpec) throws(RPCError) -> JobID? {
        guard let token = spec.clientToken, let existing = clientTokens[token], let job = store.jobs[existing]
        else { return nil }
        try spec.checkSameAdd(as: job.spec, token: token, job: existing)
        return existing
    }
}
