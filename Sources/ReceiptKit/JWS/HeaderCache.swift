#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
