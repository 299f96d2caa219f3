extension AppStoreVerifier {
    /// Verifies one input as `verify-receipt` reads it, detecting its format, and never throws.
    ///
    /// Accepted formats:
    /// - a compact JWS of any kind (see ``verify(_:as:)``);
    /// - a JSON object with a `signedPayload` member: the body Apple posts to a notification
    ///   webhook.
    ///
    /// Leading and trailing ASCII whitespace is ignored.
    ///
    /// - Parameters:
    ///   - input: One input's bytes.
    ///   - kind: The kind to verify a JWS as, or `nil` to detect it.
    /// - Returns: The record, or the error that rejected the input.
    public func verify(input: some Collection<UInt8>, as kind: PayloadKind? = nil) -> VerificationOutcome {
        do {
            return .verified(try verifyInput(Array(input), as: kind))
        } catch let error as ReceiptKitError {
            return .rejected(error)
        } catch {
            return .rejected(ReceiptKitError(.unrecognizedInput, "unexpected error: \(error)"))
        }
    }

    private func verifyInput(_ raw: [UInt8], as kind: PayloadKind?) throws -> VerificationRecord {
        let input = Self.trimmed(raw)
        guard let first = input.first else {
            throw ReceiptKitError(.unrecognizedInput, "the input is empty")
        }
        if first == UInt8(ascii: "{") {
            return try verifyNotificationBody(Array(input), as: kind)
        }
        return try verify(jwsBytes: Array(input), as: kind)
    }

    /// Verifies a notification webhook body, `{"signedPayload": "…"}`.
    ///
    /// - Parameter body: The request body.
    /// - Returns: The verified notification and its verified nested payloads.
    /// - Throws: ``ReceiptKitError``; `unrecognized_input` when the body is not such an object.
    public func verifyNotificationBody(_ body: some Collection<UInt8>) throws -> VerifiedNotification {
        let signedPayload = try Self.signedPayload(of: Array(body), limit: configuration.maximumJWSSize)
        return try verifyNotification(signedPayload)
    }

    private func verifyNotificationBody(_ body: [UInt8], as kind: PayloadKind?) throws -> VerificationRecord {
        let signedPayload = try Self.signedPayload(of: body, limit: configuration.maximumJWSSize)
        return try verify(jwsBytes: Array(signedPayload.utf8), as: kind ?? .notification)
    }

    private static func signedPayload(of body: [UInt8], limit: Int) throws -> String {
        // The body is the JWS plus a few bytes of JSON: refuse anything that could not fit.
        guard body.count <= limit + 1024 else {
            throw ReceiptKitError(.inputTooLarge, "notification body is \(body.count) bytes; the JWS limit is \(limit)")
        }
        let document = try JSONDocument(parsingObject: body, code: .unrecognizedInput, what: "JSON input")
        return try document.withRoot(code: .unrecognizedInput) { root in
            guard let signedPayload = try root.string("signedPayload") else {
                throw ReceiptKitError(.unrecognizedInput, "JSON input has no 'signedPayload' string member")
            }
            return signedPayload
        }
    }

    private static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }
        guard let start = bytes.firstIndex(where: { !isSpace($0) }),
            let end = bytes.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return bytes[start...end]
    }
}
