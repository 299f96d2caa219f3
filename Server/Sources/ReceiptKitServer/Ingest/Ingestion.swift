import ReceiptKit

/// Apple's inputs in: each verified by ReceiptKit, made into what the store keeps
/// (``VerifiedInput``) and recorded — the one path every input takes, whether a route, a purchase
/// by id, a sync or reconciliation brought it. Nothing unverified is recorded: the only inputs
/// recorded are made from a `VerificationRecord`, which only the verifier makes.
struct Ingestion: Sendable {
    let verifier: AppStoreVerifier
    let store: Store
    let metrics: ServerMetrics

    /// An input verified and recorded.
    struct Recorded: Sendable {
        /// Its record, as `verify-receipt` prints it.
        let record: VerificationRecord
        /// What was recorded.
        let input: VerifiedInput
        /// Whether it was new (not a replay, nor a repeat of what is stored).
        let isNew: Bool
    }

    /// An input that did not verify: nothing of it was recorded.
    struct Rejected: Error {
        let error: ReceiptKitError
    }

    /// The bundle id a verified record is of: the configured app it matched, or the one given
    /// (the app Apple was asked for, for a renewal info Apple answered, which carries none), or
    /// the only app served.
    func bundleId(of record: VerificationRecord, given: String? = nil) -> String {
        record.matchedApp?.bundleId ?? given ?? verifier.configuration.bundleId ?? ""
    }

    /// Verifies and records a notification's body as Apple posts it, `{"signedPayload": "…"}`.
    ///
    /// - Throws: ``Rejected`` when it does not verify; ``InvalidInput`` when it carries no
    ///   identifier to store it by; ``StoreError`` when the database fails.
    func notification(_ body: [UInt8], receivedAt: Timestamp) async throws -> Recorded {
        let record = try verified { VerificationRecord(try verifier.verifyNotificationBody(body)) }
        let recorded = try await self.record(record, raw: body, customerId: nil, receivedAt: receivedAt, source: .appleNotification)
        metrics.notification(
            type: record.notification?.rawNotificationType ?? "-", bundleId: bundleId(of: record), environment: record.environment ?? "-")
        return recorded
    }

    /// Verifies and records a purchase the app reported: a StoreKit 2 transaction JWS or a legacy
    /// receipt's base64, linked to `customerId`, or, when none is given, to the transaction's
    /// `appAccountToken`. What is stored of it is Apple's signed bytes alone
    /// (``Purchase/signedBytes``): the customer id is kept beside them, in the link, so that
    /// erasing the customer (``CustomerErasure``) leaves Apple's bytes whole.
    ///
    /// - Throws: ``Rejected`` when it does not verify; ``InvalidInput`` when there is no
    ///   customer to link it to; ``StoreError`` when the database fails.
    func purchase(_ purchase: Purchase, customerId: String?, receivedAt: Timestamp) async throws -> (Recorded, customerId: String) {
        let record: VerificationRecord
        switch purchase {
        case .signedTransaction(let jws):
            record = try verified { try verifier.verify(jws, as: .transaction) }
        case .receipt(let base64):
            record = try verified(verifier.verify(input: Array(base64.utf8), as: .receipt))
        }
        let token = record.transactions.lazy.compactMap(\.appAccountToken).first { !$0.isEmpty }
        guard let customer = customerId ?? token else {
            throw InvalidInput("customer_id is required: the purchase carries no appAccountToken to link it to")
        }
        let recorded = try await self.record(record, raw: purchase.signedBytes, customerId: customer, receivedAt: receivedAt, source: .app)
        return (recorded, customer)
    }

    /// A purchase the app reported.
    enum Purchase {
        case signedTransaction(String)
        case receipt(String)

        /// What is stored of it: the JWS, or the receipt's base64, as the app sent it.
        var signedBytes: [UInt8] {
            switch self {
            case .signedTransaction(let jws): Array(jws.utf8)
            case .receipt(let base64): Array(base64.utf8)
            }
        }
    }

    /// Records a verified record: its input made and recorded, linked to `customerId` (and to each
    /// transaction's `appAccountToken`).
    ///
    /// - Parameters:
    ///   - skipsRepeats: For the items Apple answers the App Store Server API with, which it signs
    ///     anew for every answer: one that only repeats what is stored is not recorded again
    ///     (``VerifiedInput/skipsRepeats``).
    ///   - bundleId: The app Apple was asked for, for what the App Store Server API answered.
    /// - Throws: ``InvalidInput`` when the record carries no identifier to store it by;
    ///   ``StoreError`` when the database fails; `CancellationError` when the calling task is
    ///   cancelled first (the write may still commit, which is harmless: a replay changes nothing).
    func record(
        _ record: VerificationRecord, raw: [UInt8], customerId: String?, receivedAt: Timestamp, source: EventCause.Source,
        skipsRepeats: Bool = false, bundleId: String? = nil
    ) async throws -> Recorded {
        var input = try VerifiedInput(
            record: record, raw: raw, bundleId: self.bundleId(of: record, given: bundleId), customerId: customerId,
            receivedAt: receivedAt, source: source)
        input.skipsRepeats = skipsRepeats
        let isNew = try await store.record(input)
        return Recorded(record: record, input: input, isNew: isNew)
    }

    /// Counts a verification and passes its record on, or throws ``Rejected``.
    func verified(_ outcome: VerificationOutcome) throws(Rejected) -> VerificationRecord {
        switch outcome {
        case .verified(let record):
            metrics.verification(result: "verified", bundleId: bundleId(of: record), environment: record.environment ?? "-")
            return record
        case .rejected(let error):
            metrics.verification(result: error.code.rawValue)
            throw Rejected(error: error)
        }
    }

    private func verified(_ verify: () throws -> VerificationRecord) throws -> VerificationRecord {
        do {
            return try verified(.verified(verify()))
        } catch let error as ReceiptKitError {
            return try verified(.rejected(error))
        }
    }
}
