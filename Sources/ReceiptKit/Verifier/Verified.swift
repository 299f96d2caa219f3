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
    /// The configured app the payload belongs to (see ``AppStoreVerifier/Configuration/apps``):
    /// the one its bundle id names, or its App Apple ID where it carries no bundle id; for a
    /// renewal info, its notification's app, or the only configured one. `nil` when no app is
    /// configured or the payload names none of them (a renewal info verified on its own while
    /// several apps are configured). The environment it matched is the one it declares.
    public let matchedApp: AppStoreVerifier.App?

    init(payload: Payload, chain: ChainSummary, validatedAt: Timestamp,
         validationTimeSource: ValidationTimeSource = .payloadDate, revocation: RevocationResult? = nil,
         matchedApp: AppStoreVerifier.App? = nil) {
        self.payload = payload
        self.chain = chain
        self.validatedAt = validatedAt
        self.validationTimeSource = validationTimeSource
        self.revocation = revocation
        self.matchedApp = matchedApp
    }

    /// A payload authenticated as `authentication` says, whose claims matched `matchedApp`.
    init(payload: Payload, _ authentication: Authentication, matchedApp: AppStoreVerifier.App?) {
        self.init(payload: payload, chain: authentication.chain, validatedAt: authentication.validatedAt,
                  validationTimeSource: authentication.validationTimeSource, revocation: authentication.revocation,
                  matchedApp: matchedApp)
    }
}

/// What authenticating a JWS established, before its claims are checked: the chain its signature
/// verified under, the instant and its source, and the revocation result.
struct Authentication {
    let chain: ChainSummary
    let validatedAt: Timestamp
    let validationTimeSource: ValidationTimeSource
    let revocation: RevocationResult?
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
