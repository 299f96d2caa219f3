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
    /// `BASE64URL(header) "." BASE64URL(payload)`: the bytes the signature covers.
    let signingInput: ArraySlice<UInt8>

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
        let dot = UInt8(ascii: ".")
        guard let first = token.firstIndex(of: dot),
            let second = token[(first + 1)...].firstIndex(of: dot)
        else {
            throw ReceiptKitError(.malformedJWS, "a compact JWS has exactly three segments separated by '.'")
        }
        guard !token[(second + 1)...].contains(dot) else {
            throw ReceiptKitError(.malformedJWS, "a compact JWS has exactly three segments, found more")
        }
        func decode(_ segment: ArraySlice<UInt8>, _ name: String) throws -> [UInt8] {
            guard let bytes = Base64.decode(segment, alphabet: .urlNoPadding) else {
                throw ReceiptKitError(.malformedJWS, "the \(name) segment is not canonical unpadded base64url")
            }
            return bytes
        }
        headerSegment = token[..<first]
        payload = try decode(token[(first + 1)..<second], "payload")
        signature = try decode(token[(second + 1)...], "signature")
        signingInput = token[..<second]
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
