#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A JWS in compact serialization (RFC 7515 §7.1), split and base64url-decoded but not verified.
///
///     JWS = BASE64URL(header) "." BASE64URL(payload) "." BASE64URL(signature)
///
/// Each segment must be the canonical unpadded base64url of its bytes; an empty segment is the
/// encoding of zero bytes.
struct CompactJWS {
    /// `BASE64URL(header)`, still encoded: a header already validated is recognized by these
    /// bytes without being decoded again.
    let headerSegment: ArraySlice<UInt8>
    /// The decoded payload (JSON text).
    let payload: [UInt8]
    /// The decoded signature.
    let signature: [UInt8]
    /// `BASE64URL(header) "."`: how the signed bytes start.
    let signingPrefix: ArraySlice<UInt8>
    /// `BASE64URL(payload)`: how they end. The signature covers the two, joined.
    let payloadSegment: ArraySlice<UInt8>

    /// Splits and decodes `token`.
    ///
    /// - Parameters:
    ///   - token: The token's bytes.
    ///   - maximumSize: The largest token accepted, in bytes.
    /// - Throws: ``ReceiptKitError/Code/inputTooLarge`` or ``ReceiptKitError/Code/malformedJWS``.
    init(_ token: [UInt8], maximumSize: Int) throws {
        guard token.count <= maximumSize else {
            throw ReceiptKitError(.inputTooLarge, "JWS is \(token.count) bytes; the limit is \(maximumSize)")
        }
        guard let first = Self.indexOfDot(in: token, from: 0),
            let second = Self.indexOfDot(in: token, from: first + 1)
        else {
            throw ReceiptKitError(.malformedJWS, "a compact JWS has exactly three segments separated by '.'")
        }
        guard Self.indexOfDot(in: token, from: second + 1) == nil else {
            throw ReceiptKitError(.malformedJWS, "a compact JWS has exactly three segments, found more")
        }
        func decode(_ segment: ArraySlice<UInt8>, _ name: String) throws -> [UInt8] {
            guard let bytes = Base64.decode(segment, alphabet: .urlNoPadding) else {
                throw ReceiptKitError(.malformedJWS, "the \(name) segment is not canonical unpadded base64url")
            }
            return bytes
        }
        headerSegment = token[..<first]
        signingPrefix = token[...first]
        payloadSegment = token[(first + 1)..<second]
        payload = try decode(payloadSegment, "payload")
        signature = try decode(token[(second + 1)...], "signature")
    }

    /// The index of the first `.` at or after `start` (`memchr`: tokens are scanned whole).
    private static func indexOfDot(in token: [UInt8], from start: Int) -> Int? {
        token.withUnsafeBufferPointer { base -> Int? in
            guard let origin = base.baseAddress, start < base.count,
                let found = memchr(origin + start, Int32(UInt8(ascii: ".")), base.count - start)
            else { return nil }
            return origin.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Decodes the header segment.
    ///
    /// - Throws: ``ReceiptKitError/Code/malformedJWS`` when it is not canonical base64url.
    func decodedHeader() throws -> [UInt8] {
        guard let bytes = Base64.decode(headerSegment, alphabet: .urlNoPadding) else {
            throw ReceiptKitError(.malformedJWS, "the header segment is not canonical unpadded base64url")
        }
        return bytes
    }
}
