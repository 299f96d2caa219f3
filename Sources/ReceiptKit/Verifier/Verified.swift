/// A payload whose signature, chain and claims ReceiptKit verified: only ``AppStoreVerifier``
/// creates one.
public struct Verified<Payload: Sendable>: Sendable {
    /// The decoded payload.
    public let payload: Payload
    /// The chain the signature was verified under.
    public let chain: ChainSummary
    /// The instant the chain was validated at.
    public let validatedAt: Timestamp
    /// Where ``validatedAt`` came from.
    public let validationTimeSource: ValidationTimeSource

    init(payload: Payload, chain: ChainSummary, validatedAt: Timestamp,
         validationTimeSource: ValidationTimeSource = .payloadDate) {
        self.payload = payload
        self.chain = chain
        self.validatedAt = validatedAt
        self.validationTimeSource = validationTimeSource
    }
}

/// A verified App Store Server Notification V2 together with its verified nested JWS.
public struct VerifiedNotification: Sendable {
    /// The notification itself.
    public let notification: Verified<NotificationPayload>
    /// The verified `data.signedTransactionInfo`, when present.
    public let transaction: Verified<JWSTransaction>?
    /// The verified `data.signedRenewalInfo`, when present.
    public let renewalInfo: Verified<JWSRenewalInfo>?
    /// The verified `appData.signedAppTransactionInfo`, when present.
    public let appTransaction: Verified<AppTransaction>?
}
