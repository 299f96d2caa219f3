import Foundation
import ReceiptKit

/// The members of a stored record (`verify-receipt`'s JSON, as ``VerifiedInput/record`` keeps it) that
/// the routes reading history need, by the names `docs/output-schema.md` gives them: the
/// transactions, renewal info and notification that `/verifyReceipt`'s arrays and the console's
/// timeline are made of, and the chain the record verified to.
///
/// Only what the server itself stored is read this way: records were verified when stored, and
/// their transactions decode back into the `NormalizedTransaction` values they were rendered from.
struct StoredRecord: Decodable {
    let kind: String?
    let transactions: [NormalizedTransaction]?
    let notification: Notification?
    let renewalInfo: RenewalInfo?
    let app: App?
    let validatedAt: Instant?
    let chain: Chain?

    private enum CodingKeys: String, CodingKey {
        case kind, transactions, notification, app, chain
        case renewalInfo = "renewal_info"
        case validatedAt = "validated_at"
    }

    /// Decodes a stored input's record.
    ///
    /// - Throws: ``StoreError`` when it does not decode (the store is damaged).
    init(_ input: StoredInput) throws {
        do {
            self = try JSONDecoder().decode(StoredRecord.self, from: Data(input.record.utf8))
        } catch {
            throw StoreError.damaged("a stored \(input.kind) record does not decode: \(error)")
        }
    }

    /// Each transaction with its ledger copy, dated and revoked as the entitlement ledger dates
    /// and revokes it (``EntitlementLedger/copy(of:receiptCreationDate:notificationSignedDate:isRevocation:validatedAt:)``);
    /// a transaction without a transaction id has none and is left out.
    ///
    /// - Parameter receivedAt: When the server received the record (milliseconds), standing in
    ///   for `validated_at` should it be absent.
    func transactionCopies(receivedAt: Int64) -> [(transaction: NormalizedTransaction, copy: LedgerCopy)] {
        let isRevocation = ["REFUND", "REVOKE"].contains(notification?.type)
        let validatedAt = validatedAt?.timestamp ?? Timestamp(millisecondsSince1970: receivedAt)
        return (transactions ?? []).compactMap { transaction in
            EntitlementLedger.copy(
                of: transaction, receiptCreationDate: app?.receiptCreationDate?.timestamp,
                notificationSignedDate: notification?.signedDate?.timestamp, isRevocation: isRevocation,
                validatedAt: validatedAt
            ).map { (transaction, $0) }
        }
    }

    /// The ledger copy of the renewal info, dated as the ledger dates it, or `nil` without one
    /// (or without its original transaction id).
    func renewalInfoCopy() -> LedgerCopy? {
        guard let info = renewalInfo, let id = info.originalTransactionId else { return nil }
        return EntitlementLedger.renewalInfoCopy(
            originalTransactionId: id, environment: info.environment ?? "", signedDate: info.signedDate?.timestamp,
            notificationSignedDate: notification?.signedDate?.timestamp, renewalDate: info.renewalDate?.timestamp,
            gracePeriodExpiresDate: info.gracePeriodExpiresDate?.timestamp,
            autoRenewStatus: info.autoRenewStatus.flatMap { Int32($0.text) },
            expirationIntent: info.expirationIntent.flatMap { Int32($0.text) },
            isInBillingRetryPeriod: info.isInBillingRetryPeriod == true, productId: info.productId,
            autoRenewProductId: info.autoRenewProductId, appAccountToken: info.appAccountToken)
    }

    struct Offer: Decodable {
        let type: String?
        let id: String?
    }

    struct Notification: Decodable {
        let type: String?
        let subtype: String?
        let uuid: String?
        let signedDate: Instant?

        private enum CodingKeys: String, CodingKey {
            case type, subtype, uuid
            case signedDate = "signed_date"
        }
    }

    struct RenewalInfo: Decodable {
        let environment: String?
        let originalTransactionId: String?
        let productId: String?
        let autoRenewProductId: String?
        let autoRenewStatus: Scalar?
        let expirationIntent: Scalar?
        let isInBillingRetryPeriod: Bool?
        let gracePeriodExpiresDate: Instant?
        let renewalDate: Instant?
        let priceIncreaseStatus: Scalar?
        let offer: Offer?
        let appAccountToken: String?
        let signedDate: Instant?

        private enum CodingKeys: String, CodingKey {
            case environment, offer
            case originalTransactionId = "original_transaction_id"
            case productId = "product_id"
            case autoRenewProductId = "auto_renew_product_id"
            case autoRenewStatus = "auto_renew_status"
            case expirationIntent = "expiration_intent"
            case isInBillingRetryPeriod = "is_in_billing_retry_period"
            case gracePeriodExpiresDate = "grace_period_expires_date"
            case renewalDate = "renewal_date"
            case appAccountToken = "app_account_token"
            case priceIncreaseStatus = "price_increase_status"
            case signedDate = "signed_date"
        }

        /// Whether it is the renewal info of `key` (renewal infos carry no bundle id).
        func belongs(to key: SubscriptionKey) -> Bool {
            originalTransactionId == key.originalTransactionId && (environment ?? "") == key.environment
        }
    }

    struct App: Decodable {
        let receiptCreationDate: Instant?

        private enum CodingKeys: String, CodingKey {
            case receiptCreationDate = "receipt_creation_date"
        }
    }

    /// The certificate chain the record verified to: SHA-256 of its leaf and of the root it
    /// ended in, hex.
    struct Chain: Decodable {
        let rootSHA256: String?
        let leafSHA256: String?

        private enum CodingKeys: String, CodingKey {
            case rootSHA256 = "root_sha256"
            case leafSHA256 = "leaf_sha256"
        }
    }

    /// A date of a stored record: its ISO 8601 text, read back as an instant.
    struct Instant: Decodable {
        let timestamp: Timestamp

        init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let timestamp = Timestamp(rfc3339: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a date: \(text)"))
            }
            self.timestamp = timestamp
        }
    }

    /// A number (or a string) of a stored record, as the text verifyReceipt writes numbers in.
    struct Scalar: Decodable {
        let text: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int64.self) {
                text = String(number)
            } else {
                text = try container.decode(String.self)
            }
        }
    }
}
