// Each verified payload as a normalized record. The records are built here, beside `Verified`,
// so that `Normalized/` depends only on the models and never on the verifier.

extension VerificationRecord {
    /// The record of a verified transaction.
    public init(_ verified: Verified<JWSTransaction>) {
        self.init(kind: .transaction, environment: verified.payload.rawEnvironment, validatedAt: verified.validatedAt,
                  validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
                  chain: verified.chain, transactions: [NormalizedTransaction(verified.payload)])
    }

    /// The record of verified renewal info.
    public init(_ verified: Verified<JWSRenewalInfo>) {
        self.init(kind: .renewalInfo, environment: verified.payload.rawEnvironment, validatedAt: verified.validatedAt,
                  validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
                  chain: verified.chain, renewalInfo: verified.payload)
    }

    /// The record of a verified AppTransaction.
    public init(_ verified: Verified<AppTransaction>) {
        self.init(kind: .appTransaction, environment: verified.payload.rawReceiptType, validatedAt: verified.validatedAt,
                  validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
                  chain: verified.chain, app: NormalizedApp(verified.payload))
    }

    /// The record of a verified realtime request.
    public init(_ verified: Verified<RealtimeRequest>) {
        self.init(kind: .realtimeRequest, environment: verified.payload.rawEnvironment, validatedAt: verified.validatedAt,
                  validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
                  chain: verified.chain, realtimeRequest: verified.payload)
    }

    /// The record of a verified notification, with its nested transaction, renewal info and app.
    public init(_ verified: VerifiedNotification) {
        let notification = verified.notification
        self.init(
            kind: .notification, environment: notification.payload.rawEnvironment,
            validatedAt: notification.validatedAt, validationTimeSource: notification.validationTimeSource,
            revocation: verified.revocation, chain: notification.chain,
            transactions: verified.transaction.map { [NormalizedTransaction($0.payload)] } ?? [],
            notification: notification.payload, renewalInfo: verified.renewalInfo?.payload,
            app: verified.appTransaction.map { NormalizedApp($0.payload) })
    }

    /// The record of a verified legacy receipt: kind `receipt`, the environment its receipt type
    /// stands for, the app block and one transaction per in-app purchase, in the receipt's order.
    ///
    /// - Parameter verified: The verified receipt.
    public init(_ verified: Verified<AppReceipt>) {
        let receipt = verified.payload
        let environment = receipt.environment?.rawValue ?? receipt.rawReceiptType
        self.init(
            kind: .receipt, environment: environment, validatedAt: verified.validatedAt,
            validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
            chain: verified.chain,
            transactions: receipt.inAppPurchases.map { NormalizedTransaction($0, of: receipt) },
            app: NormalizedApp(receipt), receipt: receipt)
    }
}
