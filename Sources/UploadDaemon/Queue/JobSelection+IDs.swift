import UploadCore
import UploadWire

/// The jobs a command's selection names.
extension JobSelection {
    /// The IDs named, or with `all` or `batch` every job (of the batch) in a state where `command`
    /// does something, narrowed to `states` when given, by ID.
    func ids(for command: JobCommand, in jobs: JobTable) throws(RPCError) -> [JobID] {
        if all == true || batch != nil {
            guard namedIDs.isEmpty else {
                throw RPCError.invalidParams("give job IDs, or 'all' or 'batch', not both")
            }
            // The states where the command does something (resume --all: paused jobs, and failed
            // ones with a fresh budget, as the help says), narrowed to `states` when given.
            var from = command.statesForAll
            if let states = states { from.formIntersection(states) }
            return jobs.values.filter { job in
                from.contains(job.state) && (batch == nil || job.spec.batch == batch)
            }.map(\.id).sorted()
        } else {
            guard states == nil else {
                throw RPCError.invalidParams("'states' narrows 'all'; with IDs, name just the jobs")
            }
            guard !namedIDs.isEmpty else {
                throw RPCError.invalidParams("name the jobs: {\"id\": N} or {\"ids\": [...]}")
            }
            return namedIDs
        }
    }
}
