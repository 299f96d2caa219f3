// Each verified payload as a normalized record. The records are built here, beside `Verified`,
// so that `Normalized/` depends only on the models and never on the verifier.

extension VerificationRecord {
    /// The record of a verified transaction.
    public init(_ verified: Verified<JWSTransaction>) {
        self.init(verified, revocation: verified.revocation, transactions: [NormalizedTransaction(verified.payload)])
    }

    /// The record of verified renewal info.
    public init(_ verified: Verified<JWSRenewalInfo>) {
        self.init(verified, revocation: verified.revocation, renewalInfo: verified.payload)
    }

    /// The record of a verified AppTransaction.
    public init(_ verified: Verified<AppTransaction>) {
        self.init(verified, revocation: verified.revocation, app: NormalizedApp(verified.payload))
    }

    /// The record of a verified realtime request.
    public init(_ verified: Verified<RealtimeRequest>) {
        self.init(verified, revocation: verified.revocation, realtimeRequest: verified.payload)
    }

    /// The record of a verified notification, with its nested transaction, renewal info and app.
    public init(_ verified: VerifiedNotification) {
        self.init(
            verified.notification, revocation: verified.revocation,
            transactions: verified.transaction.map { [NormalizedTransaction($0.payload)] } ?? [],
            notification: verified.notification.payload, renewalInfo: verified.renewalInfo?.payload,
            app: verified.appTransaction.map { NormalizedApp($0.payload) })
    }

    /// The record of a verified legacy receipt: kind `receipt`, the environment its receipt type
    /// stands for, the app block and one transaction per in-app purchase, in the receipt's order.
    ///
    /// - Parameter verified: The verified receipt.
    public init(_ verified: Verified<AppReceipt>) {
        let receipt = verified.payload
        self.init(
            verified, revocation: verified.revocation,
            transactions: receipt.inAppPurchases.map { NormalizedTransaction($0, of: receipt) },
            app: NormalizedApp(receipt), receipt: receipt)
    }

    /// The record of any verified payload: its kind, the environment its claims declare, when and
    /// under which chain it was verified, and the members its kind fills.
    private init<Payload: ClaimablePayload>(
        _ verified: Verified<Payload>, revocation: RevocationResult?,
        transactions: [NormalizedTransaction] = [], notification: NotificationPayload? = nil,
        renewalInfo: JWSRenewalInfo? = nil, app: NormalizedApp? = nil, realtimeRequest: RealtimeRequest? = nil,
        receipt: AppReceipt? = nil
    ) {
        self.init(
            kind: Payload.kind, environment: verified.payload.claims.environment, validatedAt: verified.validatedAt,
            validationTimeSource: verified.validationTimeSource, revocation: revocation, chain: verified.chain,
            transactions: transactions, notification: notification, renewalInfo: renewalInfo, app: app,
            realtimeRequest: realtimeRequest, receipt: receipt, matchedApp: verified.matchedApp)
    }
}
