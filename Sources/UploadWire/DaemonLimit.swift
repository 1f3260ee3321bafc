import Foundation

/// `daemon.limit` params and answer: bytes per second for all uploads together, or null for none.
/// The params may also spell it as people do (`"5M"`, `"off"`).
public struct LimitParams: Codable, Sendable, Equatable, StrictParams {
    public var rate: JSONValue?

    public init(rate: JSONValue?) { self.rate = rate }

    public static let knownKeys: Set<String> = ["rate"]

    /// The lowest limit taken, 1 KiB/s: slower, a transfer's packets come so seldom that the
    /// upload looks stalled to the server and to people (`limit 1` meant 1 byte a second).
    public static let minimumRate: Int64 = 1024

    /// Why `bytes` a second is refused as a limit, or nil when it is fine.
    public static func problem(withRate bytes: Int64) -> String? {
        guard bytes < minimumRate else { return nil }
        return "a limit of \(ByteSize.format(bytes))/s is below the lowest, 1 KiB/s: uploads that slow look stalled; "
            + "give at least 1K, or off for no limit"
    }

    /// The limit asked for: nil for none.
    public func bytesPerSecond() throws(RPCError) -> Int64? {
        let bytes = try askedBytesPerSecond()
        if let bytes, let problem = Self.problem(withRate: bytes) { throw RPCError.invalidParams(problem) }
        return bytes
    }

    private func askedBytesPerSecond() throws(RPCError) -> Int64? {
        switch rate {
        case nil, .null?: return nil
        case .number(let number)?:
            guard number > 0, number < 1e15, number == number.rounded() else {
                throw RPCError.invalidParams(
                    "rate must be a whole number of bytes per second above 0, or null for none")
            }
            return Int64(number)
        case .string(let text)?:
            if ["off", "none", "0"].contains(text.lowercased()) { return nil }
            guard let bytes = try? ByteSize.parse(text), bytes > 0 else {
                throw RPCError.invalidParams("rate '\(text)' is not a size like 5M (bytes per second), or off")
            }
            return bytes
        default:
            throw RPCError.invalidParams("rate is a number of bytes per second, a size like \"5M\", or off")
        }
    }
}

/// `daemon.limit`'s answer.
public struct LimitResult: Codable, Sendable, Equatable {
    public var bandwidthLimit: Int64?

    public init(bandwidthLimit: Int64?) { self.bandwidthLimit = bandwidthLimit }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(bandwidthLimit, forKey: .bandwidthLimit)  // null when none
    }

    enum CodingKeys: String, CodingKey {
        case bandwidthLimit = "bandwidth_limit"
    }
}
