#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
