import Foundation
import ReceiptKit
import ReceiptKitFormats

/// `latest_receipt_info` and `pending_renewal_info` of a `POST /verifyReceipt` answer, in the
/// shape Apple's deprecated endpoint gave them, from what the service has stored for the
/// receipt's subscriptions: every verified event (receipt, transaction, notification, renewal
/// info) that touched one of the receipt's keys.
///
/// - `latest_receipt_info`: every transaction of those keys, once each — the copy signed last
///   (a renewal that arrived by notification, a refund's revoked copy) — newest purchase first,
///   as Apple's endpoint listed them in its later years. Each element is ReceiptKit's
///   `VerifyReceiptTransaction` of the stored transaction, the renderer of the receipt's own
///   `in_app` elements, with the revocation a `REFUND` or `REVOKE` notification reports.
/// - `pending_renewal_info`: one element per auto-renewable subscription among the keys, from its
///   renewal info signed last.
///
/// Only the records are read, never the raw inputs again: they were verified when stored, and
/// their transactions decode back into the `NormalizedTransaction` values they were rendered from.
enum VerifyReceiptHistory {
    /// The two arrays' JSON text.
    ///
    /// - Parameters:
    ///   - events: The stored events touching `keys`, in the order they were stored.
    ///   - keys: The receipt's keys; transactions and renewal infos of other keys are left out.
    ///   - excludeOldTransactions: The request's `exclude-old-transactions`: list only the latest
    ///     transaction of each auto-renewable subscription, as Apple did.
    /// - Returns: `latest_receipt_info` and `pending_renewal_info`, each a JSON array.
    /// - Throws: ``StoreError`` when a stored record does not decode (the store is damaged).
    static func render(
        events: [StoredEvent], keys: Set<SubscriptionKey>, excludeOldTransactions: Bool = false
    ) throws -> (latest: String, pending: String) {
        // The record's members by their schema names, as NormalizedTransaction decodes them.
        let decoder = JSONDecoder()
        var transactions: [TransactionSlot: (element: VerifyReceiptTransaction, key: SubscriptionKey, date: Int64)] = [:]
        var renewalInfos: [SubscriptionKey: (copy: StoredRecord.RenewalInfo, date: Int64)] = [:]
        for event in events {
            let record: StoredRecord
            do {
                record = try decoder.decode(StoredRecord.self, from: Data(event.record.utf8))
            } catch {
                throw StoreError("a stored \(event.kind) record does not decode: \(error)")
            }
            let eventDate = record.app?.receiptCreationDate?.milliseconds ?? record.notification?.signedDate?.milliseconds
                ?? event.receivedAt
            let isRevocation = ["REFUND", "REVOKE"].contains(record.notification?.type)
            for transaction in record.transactions ?? [] {
                guard let id = transaction.transactionId, let key = SubscriptionKey(transaction), keys.contains(key) else { continue }
                var element = VerifyReceiptTransaction(transaction)
                if isRevocation, element.cancellationDate == nil {
                    element.cancellationDate = record.notification?.signedDate?.timestamp
                }
                let date = transaction.signedDate?.millisecondsSince1970 ?? eventDate
                let slot = TransactionSlot(key: key, transactionId: id)
                if let known = transactions[slot], known.date > date { continue }
                transactions[slot] = (element, key, date)
            }
            if let info = record.renewalInfo, let key = keys.first(where: { info.belongs(to: $0) }) {
                let date = info.signedDate?.milliseconds ?? eventDate
                if (renewalInfos[key]?.date ?? .min) <= date { renewalInfos[key] = (info, date) }
            }
        }

        var latest = transactions.values.map { (element: $0.element, key: $0.key) }.sorted {
            let (lhs, rhs) = ($0.element.transaction, $1.element.transaction)
            return (lhs.purchaseDate?.millisecondsSince1970 ?? .min, lhs.transactionId ?? "")
                > (rhs.purchaseDate?.millisecondsSince1970 ?? .min, rhs.transactionId ?? "")
        }
        let isSubscription = { (listed: (element: VerifyReceiptTransaction, key: SubscriptionKey)) in
            listed.element.transaction.productType == "auto_renewable_subscription"
        }
        if excludeOldTransactions {
            var listed = Set<SubscriptionKey>()
            latest = latest.filter { !isSubscription($0) || listed.insert($0.key).inserted }
        }
        var latestJSON = JSONText()
        latestJSON.raw("[")
        latestJSON.raw(latest.map(\.element.json).joined(separator: ","))
        latestJSON.raw("]")

        let subscriptionKeys = Set(latest.filter(isSubscription).map(\.key)).union(renewalInfos.keys)
        var pendingJSON = JSONText()
        pendingJSON.raw("[")
        pendingJSON.raw(subscriptionKeys.sorted().map { key in
            let productId = latest.first { $0.key == key }?.element.transaction.productId
            return RenewalElement(key: key, info: renewalInfos[key]?.copy, latestProductId: productId).appleJSON()
        }.joined(separator: ","))
        pendingJSON.raw("]")
        return (latestJSON.text, pendingJSON.text)
    }

    /// A transaction of a key: the copies of one transaction share it.
    private struct TransactionSlot: Hashable {
        let key: SubscriptionKey
        let transactionId: String
    }

    /// One element of `pending_renewal_info`.
    private struct RenewalElement {
        let key: SubscriptionKey
        let info: StoredRecord.RenewalInfo?
        let latestProductId: String?

        func appleJSON() -> String {
            var json = AppleObject()
            json.member("auto_renew_product_id", info?.autoRenewProductId)
            json.member("original_transaction_id", key.originalTransactionId)
            json.member("product_id", info?.productId ?? latestProductId)
            json.member("auto_renew_status", info?.autoRenewStatus?.text)
            json.member("expiration_intent", info?.expirationIntent?.text)
            json.member("is_in_billing_retry_period", info?.isInBillingRetryPeriod.map { $0 ? "1" : "0" })
            json.date("grace_period_expires_date", info?.gracePeriodExpiresDate)
            json.member("price_consent_status", info?.priceIncreaseStatus?.text)
            json.member("offer_code_ref_name", info?.offer?.type == "offer_code" ? info?.offer?.id : nil)
            json.member("promotional_offer_id", info?.offer?.type == "promotional" ? info?.offer?.id : nil)
            return json.finished()
        }
    }
}

/// The members of a stored record (`verify-receipt`'s JSON) that verifyReceipt's arrays need, by
/// the names `docs/output-schema.md` gives them.
private struct StoredRecord: Decodable {
    let transactions: [NormalizedTransaction]?
    let notification: Notification?
    let renewalInfo: RenewalInfo?
    let app: App?

    private enum CodingKeys: String, CodingKey {
        case transactions, notification, app
        case renewalInfo = "renewal_info"
    }

    struct Offer: Decodable {
        let type: String?
        let id: String?
    }

    struct Notification: Decodable {
        let type: String?
        let signedDate: Instant?

        private enum CodingKeys: String, CodingKey {
            case type
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
        let priceIncreaseStatus: Scalar?
        let offer: Offer?
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
}

/// A date of a stored record: its ISO 8601 text, read back as an instant.
private struct Instant: Decodable {
    let timestamp: Timestamp

    var milliseconds: Int64 { timestamp.millisecondsSince1970 }

    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let timestamp = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a date: \(text)"))
        }
        self.timestamp = timestamp
    }
}

/// A number (or a string) of a stored record, as the text verifyReceipt writes numbers in.
private struct Scalar: Decodable {
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

/// A JSON object of verifyReceipt's: string members only, absent values omitted.
private struct AppleObject {
    private var json = JSONText()
    private var isEmpty = true

    mutating func member(_ name: String, _ value: String?) {
        guard let value else { return }
        json.raw(isEmpty ? "{" : ",")
        isEmpty = false
        json.string(name)
        json.raw(":")
        json.string(value)
    }

    /// `name` (`yyyy-MM-dd HH:mm:ss Etc/GMT`), `name_ms` and `name_pst` (America/Los_Angeles), as
    /// ReceiptKit's verifyReceipt rendering writes a date, or nothing for `nil`.
    mutating func date(_ name: String, _ instant: Instant?) {
        guard let instant else { return }
        let milliseconds = instant.milliseconds
        member(name, Self.wallClock(milliseconds) + " Etc/GMT")
        member(name + "_ms", String(milliseconds))
        let offset = Int64(Self.pacific.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant.timestamp.secondsSince1970))))
        member(name + "_pst", Self.wallClock(milliseconds + offset * 1000) + " America/Los_Angeles")
    }

    func finished() -> String {
        isEmpty ? "{}" : json.text + "}"
    }

    /// `yyyy-MM-dd HH:mm:ss` of an instant, through ReceiptKit's own calendar (`Timestamp.iso8601`).
    private static func wallClock(_ milliseconds: Int64) -> String {
        let iso = Timestamp(millisecondsSince1970: milliseconds).iso8601  // yyyy-MM-ddTHH:mm:ss.SSSZ
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(8))
    }

    private static let pacific: TimeZone = {
        guard let zone = TimeZone(identifier: "America/Los_Angeles") else {
            preconditionFailure("the time zone database has no America/Los_Angeles")
        }
        return zone
    }()
}
