/// A count per server name, for `ServerShares` and `ReadyServers`, which `fillSlots` asks at each
/// start. A queue sends to one server or a few: while it names at most `listed`, they are a list
/// searched in order (the names are mostly one string's copies, which compare by pointer); more go
/// into a dictionary. Hashing the name at every look took ~5,500 of the daemon's ~400,000
/// instructions per small file (callgrind, 2,000 PUTs of 4 KiB).
struct ServerCounts {
    static let listed = 8

    private var few: [(server: String, count: Int)] = []
    private var many: [String: Int]?

    subscript(server: String) -> Int {
        if let many { return many[server, default: 0] }
        return few.first { $0.server == server }?.count ?? 0
    }

    func contains(where matches: (String) -> Bool) -> Bool {
        if let many { return many.keys.contains(where: matches) }
        return few.contains { matches($0.server) }
    }

    mutating func add(_ server: String) {
        if many != nil {
            many![server, default: 0] += 1
        } else if let index = few.firstIndex(where: { $0.server == server }) {
            few[index].count += 1
        } else if few.count < Self.listed {
            few.append((server, 1))
        } else {
            var counts = Dictionary(uniqueKeysWithValues: few.map { ($0.server, $0.count) })
            counts[server] = 1
            many = counts
            few = []
        }
    }

    /// One fewer for `server`; a count that reaches zero goes.
    mutating func remove(_ server: String) {
        if many != nil {
            guard let count = many![server] else { return }
            many![server] = count > 1 ? count - 1 : nil
        } else if let index = few.firstIndex(where: { $0.server == server }) {
            if few[index].count > 1 { few[index].count -= 1 } else { few.remove(at: index) }
        }
    }
}
