/// Transfers per server, for `fillSlots`: which server may start one more while others wait.
struct ServerShares {
    let cap: Int
    private var counts: [String: Int] = [:]
    private var total = 0

    init(cap: Int, running: some Sequence<String>) {
        self.cap = cap
        for server in running { started(server) }
    }

    /// Whether any server can be at its cap at all: else no job's server needs working out.
    var isFull: Bool { total >= cap }

    func mayStart(_ server: String) -> Bool { counts[server, default: 0] < cap }

    mutating func started(_ server: String) {
        counts[server, default: 0] += 1
        total += 1
    }
}
