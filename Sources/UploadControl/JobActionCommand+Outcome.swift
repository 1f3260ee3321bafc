import UploadClient
import UploadWire

/// What a job action says when it did nothing or could not act on a job.
extension JobActionCommand {
    /// "nothing to pause: no job is queued or running": an `--all` or `--batch` that found
    /// nothing to act on says so, rather than print nothing.
    var nothingToDo: String {
        let scope = selection.batch.map { " of batch \($0)" } ?? ""
        let states = selection.states.map { "is " + $0.map(\.rawValue).joined(separator: " or ") }
        return "nothing to \(Self.name): no job\(scope) \(states ?? Self.nothingToDoStates)"
    }

    /// A batch no job belongs to is a mistake, as `wait --batch` says: a usage error.
    static func checkBatchExists(_ batch: JobID, on connection: DaemonConnection) throws {
        let answer = try connection.call(
            .list, JSONValue(encoding: ListParams(batch: batch, limit: 1, jobFields: ["id"])))
        guard try answer.decode(JobList.self).jobs.isEmpty else { return }
        throw UsageError(
            "batch \(batch) has no jobs (a batch is named by its first job's ID; uploadctl list shows them)")
    }

    /// One job the command could not act on: the daemon's message names the job already
    /// ("job 1 is completed: …"), so it is not named twice.
    static func text(of failure: JobFailure) -> String {
        let message = RPCError(code: failure.code, message: failure.message).messageForPeople
        guard let id = failure.id else { return message }
        let named = message.hasPrefix("job \(id) ") || message.hasPrefix("no job \(id)")
        return named ? message : "job \(id): \(message)"
    }
}
