#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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

/// Bytes as a cache key: compared in full with `memcmp`, hashed by their length and their first
/// and last 128 bytes.
///
/// Used for certificates (``ChainKey``) and, through ``sampledHash(_:)``, for JWS headers
/// (``HeaderCache``): hashing all of a 3 KB header per input would cost more than parsing the
/// payload; the sampled hash still separates real ones (a certificate's serial number sits in its
/// first bytes), and a hostile stream of colliding keys is bounded by the cache's capacity.
struct ByteKey: Hashable, Sendable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { Self.sample($0, into: &hasher) }
    }

    /// Feeds `raw`'s length and its first and last 128 bytes to `hasher`.
    static func sample(_ raw: UnsafeRawBufferPointer, into hasher: inout Hasher) {
        hasher.combine(raw.count)
        let sample = 128
        if raw.count <= 2 * sample {
            hasher.combine(bytes: raw)
        } else {
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.prefix(sample)))
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.suffix(sample)))
        }
    }

    /// The hash ``hash(into:)`` gives bytes equal to `raw`.
    static func sampledHash(_ raw: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        sample(raw, into: &hasher)
        return hasher.finalize()
    }

    static func == (lhs: ByteKey, rhs: ByteKey) -> Bool {
        lhs.bytes.count == rhs.bytes.count
            && lhs.bytes.withUnsafeBytes { l in
                rhs.bytes.withUnsafeBytes { r in memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0 }
            }
    }
}

/// A certificate chain (DER, leaf first) as a cache key: the exact bytes of its certificates.
struct ChainKey: Hashable, Sendable {
    let certificates: [ByteKey]

    init(_ certificates: [[UInt8]]) {
        self.certificates = certificates.map(ByteKey.init)
    }
}

/// A JWS header that passed validation once: its decoded form, its chain with the chain's
/// validity window, and the signing-input digest state after `BASE64URL(header) "."`.
///
/// Tokens signed by one leaf carry byte-identical headers, so after the first token the header is
/// recognized by its bytes: not decoded, not parsed, its chain not looked up again, and only the
/// payload segment hashed. The validation time is still checked against ``chain``'s window, and
/// the signature always verified.
final class ValidatedHeader: Sendable {
    /// `BASE64URL(header)`, the bytes that identify it.
    let segment: [UInt8]
    let header: JWSHeader
    let chain: CachedChain
    let signingPrefix: SHA256Prefix

    init(segment: [UInt8], header: JWSHeader, chain: CachedChain, signingPrefix: SHA256Prefix) {
        self.segment = segment
        self.header = header
        self.chain = chain
        self.signingPrefix = signingPrefix
    }
}

/// Validated headers, found by their encoded bytes without copying them.
///
/// Entries are grouped by a hash of the bytes' length and their first and last 128 bytes (see
/// ``ByteKey``) and compared in full with `memcmp`. Bounded like ``BoundedCache``: when full,
/// an insertion evicts an arbitrary entry.
final class HeaderCache: Sendable {
    private let storage = ReadWriteLocked<(buckets: [Int: [ValidatedHeader]], count: Int)>(([:], 0))
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The validated header whose segment is exactly `segment`, if cached.
    func value(for segment: ArraySlice<UInt8>) -> ValidatedHeader? {
        guard capacity > 0 else { return nil }
        return segment.withUnsafeBytes { bytes in
            let hash = ByteKey.sampledHash(bytes)
            return storage.read { state in
                state.buckets[hash]?.first { entry in
                    entry.segment.count == bytes.count
                        && (bytes.isEmpty
                            || entry.segment.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 })
                }
            }
        }
    }

    /// Caches `entry`, replacing an entry with the same segment and evicting another one if full.
    func insert(_ entry: ValidatedHeader) {
        guard capacity > 0 else { return }
        let hash = entry.segment.withUnsafeBytes(ByteKey.sampledHash)
        storage.write { state in
            if let index = state.buckets[hash]?.firstIndex(where: { $0.segment == entry.segment }) {
                state.buckets[hash]![index] = entry
                return
            }
            if state.count >= capacity, let victim = state.buckets.first {
                state.count -= victim.value.count
                state.buckets.removeValue(forKey: victim.key)
            }
            state.buckets[hash, default: []].append(entry)
            state.count += 1
        }
    }

    /// The number of cached headers.
    var count: Int {
        storage.read { $0.count }
    }
}
