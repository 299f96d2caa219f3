extension AppStoreVerifier {
    /// Verifies one input as `verify-receipt` reads it, detecting its format, and never throws.
    ///
    /// Accepted formats:
    /// - a compact JWS of any kind (see ``verify(_:as:)``);
    /// - a JSON object with a `signedPayload` member: the body Apple posts to a notification
    ///   webhook;
    /// - a legacy receipt in binary DER or BER (the input's first byte is 0x30, a SEQUENCE);
    /// - a legacy receipt in standard base64: text with no `.` in the base64 alphabet;
    /// - a JSON object with a `receipt-data` member: a verifyReceipt request body (`password`
    ///   and `exclude-old-transactions` are accepted and ignored).
    ///
    /// Leading and trailing ASCII whitespace is ignored, except around binary receipts.
    ///
    /// - Parameters:
    ///   - input: One input's bytes.
    ///   - kind: The kind to verify the input as, or `nil` to detect it; ``PayloadKind/receipt``
    ///     reads any input that is not JSON as a base64 or binary receipt.
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
        if raw.first == DERReader.Tag.sequence {
            // Binary: its last bytes may well be 0x0A or 0x20, so it is never trimmed.
            return try verifyReceiptInput(as: kind) { try verifyReceipt(raw) }
        }
        let input = Self.trimmed(raw)
        guard let first = input.first else {
            throw ReceiptKitError(.unrecognizedInput, "the input is empty")
        }
        if first == UInt8(ascii: "{") {
            return try verifyJSONInput(Array(input), as: kind)
        }
        if kind == .receipt {
            return try verifyReceiptInput(as: kind) { try verifyReceipt(base64Bytes: input) }
        }
        // Every JWS has a ".", which no base64 alphabet has: one memchr tells them apart.
        if !Base64.containsDot(input) {
            if let der = decodedReceipt(input) {
                return try verifyReceiptInput(as: kind) { try verifyReceipt(der) }
            }
            if Base64.isStandardAlphabet(input) {  // a receipt, but not canonical or too large: say which
                return try verifyReceiptInput(as: kind) { try verifyReceipt(base64Bytes: input) }
            }
        }
        return try verify(jwsBytes: input.count == raw.count ? raw : Array(input), as: kind)
    }

    /// The bytes of a receipt in canonical standard base64 within the size limit, or `nil`: a
    /// successful decoding proves the text is in the standard alphabet, so a valid receipt is
    /// read in one pass, and only other text is scanned by ``Base64/isStandardAlphabet(_:)``.
    private func decodedReceipt(_ input: ArraySlice<UInt8>) -> [UInt8]? {
        guard input.count <= maximumReceiptBase64Size, input.count % 4 == 0 else { return nil }
        return Base64.decode(input, alphabet: .standardPadded)
    }

    /// Verifies a receipt input, which `kind`, when given, must allow.
    private func verifyReceiptInput(
        as kind: PayloadKind?, _ verify: () throws -> Verified<AppReceipt>
    ) throws -> VerificationRecord {
        if let kind, kind != .receipt {
            throw ReceiptKitError(.unrecognizedInput, "a legacy receipt cannot be verified as \(kind.rawValue)")
        }
        return VerificationRecord(try verify())
    }

    /// Verifies a JSON input: a verifyReceipt request body (`receipt-data`) or a notification
    /// webhook body (`signedPayload`).
    private func verifyJSONInput(_ body: [UInt8], as kind: PayloadKind?) throws -> VerificationRecord {
        // The body is a receipt's base64 or a JWS plus a little JSON: refuse anything that could not fit.
        let limit = max(configuration.maximumJWSSize + 1024, maximumReceiptBase64Size + 4096)
        guard body.count <= limit else {
            throw ReceiptKitError(.inputTooLarge, "JSON input is \(body.count) bytes; the limit is \(limit)")
        }
        let document = try JSONDocument(parsingObject: body, code: .unrecognizedInput, what: "JSON input")
        let receiptData = try document.withRoot(code: .unrecognizedInput) { root -> String? in
            guard root.contains("receipt-data") else { return nil }
            guard !root.contains("signedPayload") else {
                throw ReceiptKitError(.unrecognizedInput, "JSON input has both 'receipt-data' and 'signedPayload'")
            }
            guard let receiptData = try root.string("receipt-data") else {
                throw ReceiptKitError(.unrecognizedInput, "JSON input's 'receipt-data' must be a string")
            }
            return receiptData
        }
        if let receiptData {
            return try verifyReceiptInput(as: kind) { try verifyReceipt(base64: receiptData) }
        }
        guard kind != .receipt else {
            throw ReceiptKitError(.unrecognizedInput, "JSON input has no 'receipt-data' string member")
        }
        // A notification webhook body: its JSON is already parsed, and is read once.
        try Self.checkNotificationBodySize(body.count, limit: configuration.maximumJWSSize)
        return try verify(jwsBytes: Self.signedPayload(in: document), as: kind ?? .notification)
    }

    /// Verifies a notification webhook body, `{"signedPayload": "…"}`.
    ///
    /// - Parameter body: The request body.
    /// - Returns: The verified notification and its verified nested payloads.
    /// - Throws: ``ReceiptKitError``; `unrecognized_input` when the body is not such an object.
    public func verifyNotificationBody(_ body: some Collection<UInt8>) throws -> VerifiedNotification {
        let body = Array(body)
        try Self.checkNotificationBodySize(body.count, limit: configuration.maximumJWSSize)
        let document = try JSONDocument(parsingObject: body, code: .unrecognizedInput, what: "JSON input")
        return try verifyNotification(String(decoding: Self.signedPayload(in: document), as: UTF8.self))
    }

    /// The body is the JWS plus a few bytes of JSON: refuses anything that could not fit.
    private static func checkNotificationBodySize(_ size: Int, limit: Int) throws {
        guard size <= limit + 1024 else {
            throw ReceiptKitError(.inputTooLarge, "notification body is \(size) bytes; the JWS limit is \(limit)")
        }
    }

    /// The bytes of a webhook body's `signedPayload` string.
    private static func signedPayload(in document: JSONDocument) throws -> [UInt8] {
        try document.withRoot(code: .unrecognizedInput) { root in
            guard let signedPayload = try root.utf8String("signedPayload") else {
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
