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
    /// The chain's revocation result, or `nil` when the policy is ``RevocationPolicy/Mode/off``.
    public let revocation: RevocationResult?

    init(payload: Payload, chain: ChainSummary, validatedAt: Timestamp,
         validationTimeSource: ValidationTimeSource = .payloadDate, revocation: RevocationResult? = nil) {
        self.payload = payload
        self.chain = chain
        self.validatedAt = validatedAt
        self.validationTimeSource = validationTimeSource
        self.revocation = revocation
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

    /// The worst revocation result of the notification and its nested JWS, or `nil` when off.
    public var revocation: RevocationResult? {
        [transaction?.revocation, renewalInfo?.revocation, appTransaction?.revocation]
            .reduce(notification.revocation) { worst, next in worst.map { $0.merged(with: next) } ?? next }
    }
}
