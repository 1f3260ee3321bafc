/// How many jobs of the ready queue send to each server, for `fillSlots`: when the running jobs'
/// server is at its cap (`ServerShares`) and no job waiting is for another server, the cap gives
/// way at once. Without it, every start looked 32 jobs ahead for one and put them back: with one
/// server, a small file's start took 32 pops and inserts, ~45 µs of the daemon's CPU.
///
/// Counted from the ready queue when first needed, then kept by `Scheduler.makeReady` and
/// `takeOutOfReady`. A job counted for a server it no longer waits for only costs a look-ahead;
/// a job waiting uncounted would let the cap give way while another server's job waits, so every
/// insert into the ready queue goes through `makeReady`.
struct ReadyServers {
    private var counts = ServerCounts()

    init(_ servers: some Sequence<String>) {
        for server in servers { add(server) }
    }

    mutating func add(_ server: String) { counts.add(server) }

    mutating func remove(_ server: String) { counts.remove(server) }

    /// Whether a job waits for a server that may start one more transfer.
    func anyMayStart(_ shares: ServerShares) -> Bool { counts.contains { shares.mayStart($0) } }
}
