import UploadWire

/// The answer to a change the store applied but could not save (a full disk).
extension RPCError {
    /// The reply when a change was made but its record could not reach the disk (a full disk): the
    /// change holds and is saved by itself once there is room (`catchUpWithJournal`); until then a
    /// crash would undo it. The error says so, rather than that nothing happened.
    static func appliedButNotSaved(_ what: String, _ error: any Error) -> RPCError {
        RPCError(
            code: RPCError.noSpaceCode,
            message:
                "done (\(what)), but not saved yet: \(error); it is saved by itself as soon as there is room (a crash before that would undo it)"
        )
    }

    /// "job 4", "jobs 4, 5, 6", or the first five "and N more".
    static func describe(_ ids: [JobID]) -> String {
        let shown = ids.prefix(5).map(\.description).joined(separator: ", ")
        return (ids.count == 1 ? "job " : "jobs ") + shown + (ids.count > 5 ? " and \(ids.count - 5) more" : "")
    }
}
