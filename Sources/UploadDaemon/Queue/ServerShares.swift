import Synchronization
import UploadHTTP
import UploadWire

/// Transfers per server, for `fillSlots`: which server may start one more while others wait.
struct ServerShares {
    let cap: Int
    private var counts = ServerCounts()
    private var total = 0

    init(cap: Int, running: some Sequence<String>) {
        self.cap = cap
        for server in running { started(server) }
    }

    /// Whether any server can be at its cap at all: else no job's server needs working out.
    var isFull: Bool { total >= cap }

    func mayStart(_ server: String) -> Bool { counts[server] < cap }

    mutating func started(_ server: String) {
        counts.add(server)
        total += 1
    }

    /// The server a destination sends to: the scheme, host and port of an http(s) URL, a remote by name,
    /// an S3 bucket, or the local disk. Remembered per destination: the jobs of an add share
    /// theirs, and parsing an URL's host costs more than the rest of the decision.
    static func server(of destination: String) -> String {
        if let known = knownServers.withLock({ $0[destination] }) { return known }
        let server: String
        switch try? Destination.parse(destination) {
        case .http(let url)?: server = Origin(url.absoluteString)?.description ?? url.absoluteString
        case .s3(let bucket, _)?: server = "s3://\(bucket)"
        case .file?: server = "file://"
        case .remote(let name, _)?: server = "remote \(name)"
        case nil: server = destination
        }
        knownServers.withLock { known in
            if known.count >= 64 { known.removeAll(keepingCapacity: true) }
            known[destination] = server
        }
        return server
    }

    private static let knownServers = Mutex<[String: String]>([:])
}
