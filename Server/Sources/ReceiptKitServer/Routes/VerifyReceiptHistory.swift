import Foundation
import ReceiptKit

/// `latest_receipt_info` and `pending_renewal_info` of a `POST /verifyReceipt` answer, in the
/// shape Apple's deprecated endpoint gave them, from what the service has stored for the
/// receipt's subscriptions: every verified event (receipt, transaction, notification, renewal
/// info) that touched one of the receipt's keys.
///
/// - `latest_receipt_info`: every transaction of those keys, once each — the copy signed last
///   (a renewal that arrived by notification, a refund's revoked copy) — newest purchase first,
///   as Apple's endpoint listed them in its later years. Each element has the members, value
///   rules and order of Apple's: numbers and flags as strings, each date as `X`, `X_ms`, `X_pst`
///   (formatted as ReceiptKit's `in_app` rendering formats them: the receipt's own purchases
///   render the same here as in `receipt.in_app`), `cancellation_date*` and `cancellation_reason`
///   for a revoked transaction.
/// - `pending_renewal_info`: one element per auto-renewable subscription among the keys, from its
///   renewal info signed last.
///
/// Only the records are read, never the raw inputs again: they were verified when stored.
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
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        var transactions: [TransactionSlot: (copy: StoredRecord.Transaction, date: Int64)] = [:]
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
            for var transaction in record.transactions ?? [] {
                guard let id = transaction.transactionId, let key = transaction.key, keys.contains(key) else { continue }
                if isRevocation, transaction.revocationDate == nil {
                    transaction.revocationDate = record.notification?.signedDate
                }
                let date = transaction.signedDate?.milliseconds ?? eventDate
                let slot = TransactionSlot(key: key, transactionId: id)
                if let known = transactions[slot], known.date > date { continue }
                transactions[slot] = (transaction, date)
            }
            if let info = record.renewalInfo, let key = keys.first(where: { info.belongs(to: $0) }) {
                let date = info.signedDate?.milliseconds ?? eventDate
                if (renewalInfos[key]?.date ?? .min) <= date { renewalInfos[key] = (info, date) }
            }
        }

        var latest = transactions.values.map { $0.copy }.sorted {
            ($0.purchaseDate?.milliseconds ?? .min, $0.transactionId ?? "") > ($1.purchaseDate?.milliseconds ?? .min, $1.transactionId ?? "")
        }
        if excludeOldTransactions {
            var listed = Set<SubscriptionKey>()
            latest = latest.filter { transaction in
                guard transaction.productType == "auto_renewable_subscription", let key = transaction.key else { return true }
                return listed.insert(key).inserted
            }
        }
        var latestJSON = JSONText()
        latestJSON.raw("[")
        latestJSON.raw(latest.map { $0.appleJSON() }.joined(separator: ","))
        latestJSON.raw("]")

        let subscriptionKeys = Set(latest.filter { $0.productType == "auto_renewable_subscription" }.compactMap(\.key))
            .union(renewalInfos.keys)
        var pendingJSON = JSONText()
        pendingJSON.raw("[")
        pendingJSON.raw(subscriptionKeys.sorted().map { key in
            let productId = latest.first { $0.key == key }?.productId
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

/// The members of a stored record (`verify-receipt`'s JSON) that verifyReceipt's arrays need.
private struct StoredRecord: Decodable {
    let transactions: [Transaction]?
    let notification: Notification?
    let renewalInfo: RenewalInfo?
    let app: App?

    struct Transaction: Decodable {
        let environment: String?
        let bundleId: String?
        let productId: String?
        let productType: String?
        let transactionId: String?
        let originalTransactionId: String?
        let webOrderLineItemId: String?
        let subscriptionGroupId: String?
        let quantity: Scalar?
        let purchaseDate: Instant?
        let originalPurchaseDate: Instant?
        let expiresDate: Instant?
        var revocationDate: Instant?
        let revocationReason: String?
        let isUpgraded: Bool?
        let ownershipType: String?
        let offer: Offer?
        let appAccountToken: String?
        let signedDate: Instant?

        /// The key the ledger files it under (as `SubscriptionKey.init?(_:)` keys a transaction).
        var key: SubscriptionKey? {
            guard let transactionId else { return nil }
            return SubscriptionKey(
                bundleId: bundleId ?? "", environment: environment ?? "", originalTransactionId: originalTransactionId ?? transactionId)
        }

        /// The element of `latest_receipt_info`, members in Apple's order.
        func appleJSON() -> String {
            var json = AppleObject()
            json.member("quantity", quantity?.text)
            json.member("product_id", productId)
            json.member("transaction_id", transactionId)
            json.member("original_transaction_id", originalTransactionId)
            json.date("purchase_date", purchaseDate)
            json.date("original_purchase_date", originalPurchaseDate)
            json.date("expires_date", expiresDate)
            json.date("cancellation_date", revocationDate)
            if let webOrderLineItemId, webOrderLineItemId != "0" { json.member("web_order_line_item_id", webOrderLineItemId) }
            let isTrial = offer?.discountType == "free_trial"
            json.member("is_trial_period", isTrial ? "true" : "false")
            json.member("is_in_intro_offer_period", offer?.type == "introductory" && !isTrial ? "true" : "false")
            if revocationDate != nil, let revocationReason {  // a receipt gives none
                switch revocationReason {
                case "refunded_due_to_issue": json.member("cancellation_reason", "1")
                case "refunded_for_other_reason": json.member("cancellation_reason", "0")
                default: json.member("cancellation_reason", revocationReason)
                }
            }
            json.member("promotional_offer_id", offer?.type == "promotional" ? offer?.id : nil)
            json.member("offer_code_ref_name", offer?.type == "offer_code" ? offer?.id : nil)
            json.member("subscription_group_identifier", subscriptionGroupId)
            if isUpgraded == true { json.member("is_upgraded", "true") }
            json.member("in_app_ownership_type", ownershipType.map { $0.uppercased() })
            json.member("app_account_token", appAccountToken)
            return json.finished()
        }
    }

    struct Offer: Decodable {
        let type: String?
        let id: String?
        let discountType: String?
    }

    struct Notification: Decodable {
        let type: String?
        let signedDate: Instant?
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

        /// Whether it is the renewal info of `key` (renewal infos carry no bundle id).
        func belongs(to key: SubscriptionKey) -> Bool {
            originalTransactionId == key.originalTransactionId && (environment ?? "") == key.environment
        }
    }

    struct App: Decodable {
        let receiptCreationDate: Instant?
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
