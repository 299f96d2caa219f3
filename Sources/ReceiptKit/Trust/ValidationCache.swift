/// A bounded map shared by every thread of one verifier, for results that depend only on their
/// key's bytes: a validated JWS header, a validated certificate chain.
///
/// When full, an insertion evicts an arbitrary entry: archives are signed by a handful of
/// leaves, so the working set is tiny and any bound far above it is never reached in practice,
/// while a hostile stream of distinct chains cannot grow memory past it.
final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let storage: ReadWriteLocked<[Key: Value]>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        self.storage = ReadWriteLocked([:])
    }

    /// The value for `key`, if cached.
    func value(for key: Key) -> Value? {
        guard capacity > 0 else { return nil }
        return storage.read { $0[key] }
    }

    /// Caches `value` for `key`, evicting another entry if the cache is full.
    func insert(_ value: Value, for key: Key) {
        guard capacity > 0 else { return }
        storage.write { entries in
            if entries.count >= capacity, entries[key] == nil, let victim = entries.keys.first {
                entries.removeValue(forKey: victim)
            }
            entries[key] = value
        }
    }

    /// The number of cached entries.
    var count: Int {
        storage.read { $0.count }
    }
}

/// A chain that passed every rule once, with the window in which it stays valid.
///
/// Path validation depends on the certificates' bytes, the anchors (fixed per verifier) and the
/// time; only the time varies between inputs signed by the same chain, so a cached chain is
/// reused for any validation time inside ``window`` and validated again from scratch outside it
/// (which then reports the precise failure). The payload signature is always verified.
struct CachedChain: Sendable {
    let chain: ValidatedChain
    /// The latest notBefore and the earliest notAfter of the certificates on the path.
    let window: ClosedRange<Timestamp>

    /// Whether a validation at `time` may reuse this chain. Certificate dates have whole-second
    /// precision, so `time` is compared by its second, as OpenSSL compares it.
    func covers(_ time: Timestamp) -> Bool {
        window.contains(Timestamp(millisecondsSince1970: time.secondsSince1970 * 1000))
    }
}

/// A certificate chain (DER, leaf first) as a cache key: the exact bytes of its certificates.
struct ChainKey: Hashable, Sendable {
    let certificates: [ByteKey]

    init(_ certificates: [[UInt8]]) {
        self.certificates = certificates.map(ByteKey.init)
    }
}
