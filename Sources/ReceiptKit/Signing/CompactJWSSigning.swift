extension ES256SigningKey {
    /// Signs `payload` as a JWS in compact serialization (RFC 7515 §7.1) with the protected
    /// header `{"alg":"ES256","kid":…,"typ":…,"x5c":[…]}`, the optional members only when given.
    ///
    /// - Parameters:
    ///   - payload: The payload's bytes (JSON for a JWT).
    ///   - keyId: The header's `kid`.
    ///   - type: The header's `typ` (`"JWT"` for Apple's tokens).
    ///   - certificateChain: DER certificates for the header's `x5c`, leaf first.
    /// - Returns: `BASE64URL(header).BASE64URL(payload).BASE64URL(r ‖ s)`.
    /// - Throws: ``ReceiptKitError`` `signing_failed` with OpenSSL's error text.
    public func compactJWS(
        payload: [UInt8], keyId: String? = nil, type: String? = nil, certificateChain: [[UInt8]] = []
    ) throws -> String {
        var header = JSONWriter()
        header.object { header in
            header.member("alg", "ES256")
            if let keyId { header.member("kid", keyId) }
            if let type { header.member("typ", type) }
            if !certificateChain.isEmpty {
                header.member("x5c", strings: certificateChain.map { Base64.encodeStandard($0) })
            }
        }
        let signingInput = Base64URL.string(Array(header.text.utf8)) + "." + Base64URL.string(payload)
        return signingInput + "." + Base64URL.string(try signature(for: Array(signingInput.utf8)))
    }
}

/// The claims of a JWT ReceiptKit signs, written in the order they are added.
struct JWTClaims {
    private enum Value {
        case string(String)
        case integer(Int64)
        case boolean(Bool)
    }

    private var members: [(name: String, value: Value)] = []

    mutating func add(_ name: String, _ value: String?) {
        if let value { members.append((name, .string(value))) }
    }

    mutating func add(_ name: String, _ value: Int64) {
        members.append((name, .integer(value)))
    }

    mutating func add(_ name: String, _ value: Bool) {
        members.append((name, .boolean(value)))
    }

    /// The claims as a JSON object's UTF-8 text.
    var json: [UInt8] {
        var writer = JSONWriter()
        writer.object { writer in
            for (name, value) in members {
                switch value {
                case .string(let string): writer.member(JSONKey(name), string)
                case .integer(let integer): writer.member(JSONKey(name), integer)
                case .boolean(let boolean): writer.member(JSONKey(name), boolean)
                }
            }
        }
        return Array(writer.text.utf8)
    }
}
