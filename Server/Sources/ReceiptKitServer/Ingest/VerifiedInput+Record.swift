import Foundation
import ReceiptKit

/// Turns a verified record into the input the store keeps: its dedup key, the keys it touches,
/// the customers it links, and the ledger copies it folds in (``EntitlementLedger/copies(of:)``).
/// What each key's state becomes is the ledger's business, not this file's.
extension VerifiedInput {
    /// The input of a verified record.
    ///
    /// - Parameters:
    ///   - record: The verified record.
    ///   - raw: The input's bytes as received.
    ///   - bundleId: The configured bundle id (renewal infos carry none).
    ///   - customerId: The customer the request names, if any; each transaction's
    ///     `appAccountToken` is linked too.
    ///   - receivedAt: The server's clock at the request.
    ///   - source: Where the input came from, for the feed's events it causes.
    ///
    /// - Throws: ``InvalidInput`` when the record carries no identifier to store it by.
    init(
        record: VerificationRecord, raw: [UInt8], bundleId: String, customerId: String?, receivedAt: Timestamp,
        source: EventCause.Source
    ) throws(InvalidInput) {
        let keys = Self.keys(of: record, bundleId: bundleId)
        var links: [CustomerLink] = []
        for key in keys {
            if let customerId { links.append(CustomerLink(customerId: customerId, key: key)) }
        }
        for transaction in record.transactions {
            if let token = transaction.appAccountToken, !token.isEmpty, let key = SubscriptionKey(transaction) {
                links.append(CustomerLink(customerId: token, key: key))
            }
        }
        guard let dedupKey = Self.dedupKey(of: record, bundleId: bundleId) else {
            throw InvalidInput("the \(record.kind.rawValue) carries no identifier to store it by")
        }
        let nested = [record.notification?.data?.signedTransactionInfo, record.notification?.data?.signedRenewalInfo]
        self.init(
            dedupKey: dedupKey, kind: record.kind.rawValue, raw: raw,
            headerSegments: RawCompaction.headerSegments(in: raw, nested: nested.compactMap { $0 }), record: record.json(),
            receivedAt: receivedAt.millisecondsSince1970,
            keys: keys, copies: EntitlementLedger.copies(of: record), links: links, cause: Self.cause(of: record, source: source),
            consumption: ConsumptionNotice.of(record, bundleId: bundleId, receivedAt: receivedAt))
        legacyDedupKey = Self.legacyDedupKey(of: record)
    }

    /// The cause the feed names for a record: a notification by its UUID, type and subtype, with
    /// the transaction it carries; a transaction by its id.
    static func cause(of record: VerificationRecord, source: EventCause.Source) -> EventCause {
        let notification = record.notification
        let transactionId = record.kind == .receipt ? nil : record.transactions.first?.transactionId
        return EventCause(
            source: source, notificationUUID: notification?.notificationUUID, notificationType: notification?.rawNotificationType,
            notificationSubtype: notification?.rawSubtype, transactionId: transactionId)
    }

    /// What makes a replay a replay.
    ///
    /// - a notification: its `notificationUUID` (Apple's retries of one notification carry the
    ///   same UUID; the UUIDs of different notifications differ);
    /// - a transaction: its app, environment, transaction id and signed date (a later copy, with
    ///   a revocation, is new; one id in Production and in Sandbox is two transactions);
    /// - renewal info: its app, environment, original transaction id and signed date;
    /// - a legacy receipt: its creation date and opaque value (random per receipt Apple issues);
    /// - anything else, or one of these without its identifier: `nil`, not stored.
    ///
    /// - Parameter bundleId: The app a renewal info is keyed under (it carries none).
    static func dedupKey(of record: VerificationRecord, bundleId: String) -> String? {
        switch record.kind {
        case .notification:
            if let uuid = record.notification?.notificationUUID, !uuid.isEmpty { return "notification:\(uuid)" }
        case .transaction:
            if let transaction = record.transactions.first, let id = transaction.transactionId {
                let signed = transaction.signedDate?.millisecondsSince1970 ?? 0
                return "transaction:\(transaction.bundleId ?? ""):\(transaction.environment ?? ""):\(id):\(signed)"
            }
        case .renewalInfo:
            if let info = record.renewalInfo, let id = info.originalTransactionId {
                return "renewal_info:\(bundleId):\(info.rawEnvironment ?? ""):\(id):\(info.signedDate?.millisecondsSince1970 ?? 0)"
            }
        case .receipt:
            if let receipt = record.receipt {
                let opaque = Hex.encode(receipt.opaqueValue)
                return "receipt:\(receipt.receiptCreationDate.millisecondsSince1970):\(opaque)"
            }
        default:
            break
        }
        return nil
    }

    /// The dedup key servers before v11 gave a transaction or renewal info (without its app and
    /// environment), which a replay of one they stored still finds; `nil` for other kinds.
    static func legacyDedupKey(of record: VerificationRecord) -> String? {
        switch record.kind {
        case .transaction:
            guard let transaction = record.transactions.first, let id = transaction.transactionId else { return nil }
            return "transaction:\(id):\(transaction.signedDate?.millisecondsSince1970 ?? 0)"
        case .renewalInfo:
            guard let info = record.renewalInfo, let id = info.originalTransactionId else { return nil }
            return "renewal_info:\(id):\(info.signedDate?.millisecondsSince1970 ?? 0)"
        default:
            return nil
        }
    }

    /// The keys a record touches, sorted: one per original transaction id among its
    /// transactions and its renewal info, keyed as ``EntitlementLedger`` keys them (a renewal
    /// info under the configured bundle id, which every input carries).
    static func keys(of record: VerificationRecord, bundleId: String) -> [SubscriptionKey] {
        EntitlementLedger.keys(of: record, renewalInfoBundleId: bundleId)
    }
}
