import UploadWire

/// The order `list` and `top` show jobs in: the order they run. Running jobs first, then the
/// queued and paused ones by the daemon's `position` (paused jobs keep their place), then the
/// rest by ID. Sorting by ID made `move` and priorities look like no-ops.
enum QueueOrder {
    /// 0 running, 1 waiting its turn, 2 anything else.
    private static func group(_ state: JobState) -> Int {
        switch state {
        case .running: return 0
        case .queued, .paused: return 1
        default: return 2
        }
    }

    /// Whether `lhs` comes before `rhs`; `position` gives each job's place in the queue (a job
    /// without one, as from an older daemon or a fresh event, goes after those with one).
    static func comesBefore(_ lhs: JobInfo, _ rhs: JobInfo, position: (JobInfo) -> Int?) -> Bool {
        let (left, right) = (group(lhs.state), group(rhs.state))
        if left != right { return left < right }
        if left == 1 {
            switch (position(lhs), position(rhs)) {
            case (let a?, let b?) where a != b: return a < b
            case (.some, nil): return true
            case (nil, .some): return false
            default: break
            }
        }
        return lhs.id < rhs.id
    }

    /// `jobs` in the order they run, by the positions they carry.
    static func sorted(_ jobs: [JobInfo]) -> [JobInfo] {
        jobs.sorted { comesBefore($0, $1, position: \.position) }
    }
}
