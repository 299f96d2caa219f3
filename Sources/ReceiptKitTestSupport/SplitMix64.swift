// SplitMix64 (Steele, Lea and Flood, 2014): a seeded generator for the tests' random histories
// and the benchmark's drawn identifiers, so that a failing history replays from its seed and
// every benchmark run posts the same bodies.

/// A small seeded generator, so a failing random history can be replayed from its seed.
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= Self.increment
        return Self.mix(state)
    }

    /// The generator's step between states (the golden ratio's fraction, in 64 bits).
    package static let increment: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The generator's output function: a bijection of 64-bit values whose outputs look random
    /// even for inputs that count up.
    package static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
