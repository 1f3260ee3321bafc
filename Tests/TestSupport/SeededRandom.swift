import Foundation

/// A small seeded generator (SplitMix64), so that a random test can be run again with the same
/// choices: the tests print their seed, and `UPLOADD_TEST_SEED` sets it when none is given.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public let seed: UInt64

    public init(seed: UInt64? = nil) {
        let chosen =
            seed ?? ProcessInfo.processInfo.environment["UPLOADD_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        self.seed = chosen
        state = chosen
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
