import UploadCore
import UploadWire

/// Where `job.move` puts a job: to the top or bottom, or right before or after another job, whose
/// priority it takes, with a rank between its new neighbours of that priority. Worked out from
/// the jobs waiting their turn, with no change made: the scheduler applies the plan.
enum QueueMove {
    enum Plan: Equatable {
        /// The job's new priority and rank, and where it went, for its history.
        case place(priority: Int, rank: Int64, destination: String)
        /// No room between its neighbours: these jobs (of that priority) get evenly spaced ranks
        /// first, and the move is worked out again.
        case renumber([Job])
    }

    /// Ranks this far apart leave room for many moves between two jobs.
    static let gap: Int64 = 1 << 16

    /// `others`: every other job waiting its turn, in any order; `anchor`: the job named by
    /// `before` or `after`, checked to wait its turn too.
    static func plan(_ job: Job, _ params: MoveParams, others waiting: [Job], anchor: Job?) -> Plan {
        let others = waiting.sorted { QueuePlace.startsBefore(($0.id, $0.place), ($1.id, $1.place)) }
        // Where it goes: between `previous` and `next` (either may be nil at an end).
        let (previous, next): (Job?, Job?)
        if let before = params.before, let index = others.firstIndex(where: { $0.id == before }) {
            (previous, next) = (index > 0 ? others[index - 1] : nil, others[index])
        } else if let after = params.after, let index = others.firstIndex(where: { $0.id == after }) {
            (previous, next) = (others[index], index + 1 < others.count ? others[index + 1] : nil)
        } else if params.top == true {
            (previous, next) = (nil, others.first)
        } else {
            (previous, next) = (others.last, nil)
        }
        // It takes the priority of the job it goes next to (the first one's for the top, the last
        // one's for the bottom), and a rank between its neighbours of that priority.
        let priority =
            anchor?.spec.priority ?? (params.top == true ? next : previous)?.spec.priority ?? job.spec.priority
        let before = previous?.spec.priority == priority ? previous : nil
        let after = next?.spec.priority == priority ? next : nil
        if let before, let after, after.place.rank - before.place.rank < 2 {
            var renumbered: [Job] = []
            for (index, other) in others.enumerated() where other.spec.priority == priority {
                var spaced = other
                spaced.rank = Int64(index + 1) &<< 16
                renumbered.append(spaced)
            }
            return .renumber(renumbered)
        }
        let rank: Int64
        switch (before, after) {
        case (let before?, let after?): rank = before.place.rank + (after.place.rank - before.place.rank) / 2
        case (nil, let after?): rank = after.place.rank - gap
        case (let before?, nil): rank = before.place.rank + gap
        case (nil, nil): rank = job.place.rank
        }
        let destination =
            if let before = params.before { "before job \(before)" } else if let after = params.after {
                "after job \(after)"
            } else { params.top == true ? "to the top" : "to the bottom" }
        return .place(priority: priority, rank: rank, destination: destination)
    }
}
