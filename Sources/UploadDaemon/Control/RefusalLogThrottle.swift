/// How many lines clients refused for their uid get in the log: the first few each get one, then
/// one line a minute counts the rest. Any local user can connect to the socket (its folder's mode
/// is the only other guard, and a user may open it up), and one connecting in a loop must not
/// fill the journal or push the daemon's own lines out of journald's rate limit.
struct RefusalLogThrottle {
    /// Refusals logged one by one before they are counted instead.
    static let burst = 5
    /// Seconds between the lines that count; after one without refusals, `burst` more are logged.
    static let interval = 60.0

    private var allowance = burst
    private var counted = 0
    private var latest = ""
    private var timerRunning = false

    /// Whether to log the refusal of `client` (as "uid U (pid P)") now, and whether to call
    /// `minutePassed` in `interval` seconds.
    mutating func refused(_ client: String) -> (log: Bool, startTimer: Bool) {
        let log = allowance > 0
        if log {
            allowance -= 1
        } else {
            counted += 1
            latest = client
        }
        let startTimer = allowance == 0 && !timerRunning
        if startTimer { timerRunning = true }
        return (log, startTimer)
    }

    /// The line counting the refusals not logged in the last minute, if any; and whether to call
    /// again in `interval` seconds (else the next refusals are logged one by one again).
    mutating func minutePassed() -> (line: String?, again: Bool) {
        guard counted > 0 else {
            allowance = Self.burst
            timerRunning = false
            return (nil, false)
        }
        defer { counted = 0 }
        let clients = counted == 1 ? "1 more client" : "\(counted) more clients"
        return (
            "control socket: refused \(clients) of other users in the last minute, the latest of uid \(latest); "
                + "only the first \(Self.burst) are logged one by one", true
        )
    }
}
