extension AppStoreVerifier {
    /// Verifies a legacy App Store receipt (PKCS #7, DER or Xcode's BER), validated at its
    /// creation date by default.
    ///
    /// The checks, in order: the size limit; the envelope, byte for byte as Apple writes it
    /// (see `ReceiptEnvelope`); the payload's attributes; the embedded certificates to a pinned
    /// or supplied root at the validation time (see `ReceiptChainValidator`); the RSA PKCS #1
    /// v1.5 signature over the payload with the SignerInfo's digest, SHA-1 or SHA-256; the device
    /// hash, when a device identifier is configured; then the bundle id, App Apple ID and
    /// environment claims.
    ///
    /// - Parameter bytes: The receipt's bytes (not base64).
    /// - Returns: The verified receipt.
    /// - Throws: ``ReceiptKitError`` naming the failed check.
    public func verifyReceipt(_ bytes: [UInt8]) throws -> Verified<AppReceipt> {
        guard bytes.count <= configuration.maximumReceiptSize else {
            throw ReceiptKitError(.inputTooLarge,
                                  "receipt is \(bytes.count) bytes; the limit is \(configuration.maximumReceiptSize)")
        }
        let envelope = try ReceiptEnvelope(bytes)
        let signerIndex = try envelope.signerCertificateIndex()
        let receipt = try ReceiptPayload.decode(envelope.payload)
        guard let library = CryptoLibraryContext.receipts else {
            throw ReceiptKitError(.invalidSignature, "OpenSSL's default provider could not be loaded",
                                  underlyingError: OpenSSLErrorQueue.drain())
        }
        let (time, source) = configuration.validationTime.resolve(
            payloadDate: receipt.receiptCreationDate, source: .payloadDate, clock: clock)
        let chain = try ReceiptChainValidator(anchors: configuration.anchors, library: library, cache: receiptChainCache)
            .validate(envelope.certificates, signerIndex: signerIndex, at: time)
        let valid = envelope.payload.withUnsafeBytes { payload in
            chain.leafKey.verifyRSAPKCS1(
                digest: envelope.digestAlgorithm.rawValue, signature: envelope.signature, message: payload, library: library)
        }
        guard valid else {
            throw ReceiptKitError(
                .invalidSignature,
                "the RSA PKCS #1 v1.5 \(envelope.digestAlgorithm.rawValue) signature does not verify under the signer's key")
        }
        if let device = configuration.deviceIdentifier, !receipt.isIssued(to: device) {
            throw ReceiptKitError(
                .deviceHashMismatch,
                "SHA-1 of device \(device), the opaque value and the bundle id is not the receipt's hash (attribute 5)")
        }
        let revocation = try checkRevocation(chain, signedAt: time)
        let match = try claims.check(receipt)
        return Verified(payload: receipt, chain: chain.summary, validatedAt: time, validationTimeSource: source,
                        revocation: revocation, matchedApp: match.app)
    }

    /// Verifies a legacy receipt given as standard, padded base64 (how apps send it and how
    /// verifyReceipt's `receipt-data` carries it).
    ///
    /// - Parameter base64: The receipt in base64, without whitespace.
    /// - Returns: The verified receipt.
    /// - Throws: ``ReceiptKitError``; `malformed_receipt` when the text is not canonical base64.
    public func verifyReceipt(base64: String) throws -> Verified<AppReceipt> {
        try verifyReceipt(base64Bytes: Array(base64.utf8)[...])
    }

    /// The largest base64 text a receipt of the configured maximum size encodes to.
    var maximumReceiptBase64Size: Int {
        Base64.paddedLength(ofByteCount: max(configuration.maximumReceiptSize, 0))
    }

    func verifyReceipt(base64Bytes text: ArraySlice<UInt8>) throws -> Verified<AppReceipt> {
        guard text.count <= maximumReceiptBase64Size else {
            throw ReceiptKitError(
                .inputTooLarge,
                "receipt base64 is \(text.count) characters; the limit is \(configuration.maximumReceiptSize) bytes (\(maximumReceiptBase64Size) characters of base64)")
        }
        guard let bytes = Base64.decode(text, alphabet: .standardPadded) else {
            throw ReceiptKitError(.malformedReceipt, "the receipt is not canonical standard base64 with padding")
        }
        return try verifyReceipt(bytes)
    }
}
