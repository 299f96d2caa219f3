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
    /// Of the copies of each transaction, and of each subscription's renewal infos, the one
    /// listed is the one ReceiptKit's rule 1 picks (``LedgerCopy/supersedes(_:)``), each dated and
    /// revoked as the entitlement ledger dates and revokes it (``EntitlementLedger/copy(of:receiptCreationDate:notificationSignedDate:isRevocation:validatedAt:)``):
    /// `/verifyReceipt` and `/v1/customers/{id}/entitlements` agree on the same records.
    ///
    /// - Parameters:
    ///   - inputs: The stored inputs touching `keys`, in the order they were stored.
    ///   - keys: The receipt's keys; transactions and renewal infos of other keys are left out.
    ///   - excludeOldTransactions: The request's `exclude-old-transactions`: list only the latest
    ///     transaction of each auto-renewable subscription, as Apple did.
    /// - Returns: `latest_receipt_info` and `pending_renewal_info`, each a JSON array.
    /// - Throws: ``StoreError`` when a stored record does not decode (the store is damaged).
    static func render(
        inputs: [StoredInput], keys: Set<SubscriptionKey>, excludeOldTransactions: Bool = false
    ) throws -> (latest: String, pending: String) {
        let (transactions, renewalInfos) = try winningCopies(of: inputs, keys: keys)
        var latest = transactions.sorted {
            let (lhs, rhs) = ($0.element.transaction, $1.element.transaction)
            return (lhs.purchaseDate?.millisecondsSince1970 ?? .min, lhs.transactionId ?? "")
                > (rhs.purchaseDate?.millisecondsSince1970 ?? .min, rhs.transactionId ?? "")
        }
        let isSubscription = { (listed: Listed) in listed.element.transaction.productType == "auto_renewable_subscription" }
        if excludeOldTransactions {
            var listed = Set<SubscriptionKey>()
            latest = latest.filter { !isSubscription($0) || listed.insert($0.key).inserted }
        }
        let subscriptionKeys = Set(latest.filter(isSubscription).map(\.key)).union(renewalInfos.keys)
        let pending = subscriptionKeys.sorted().map { key in
            pendingRenewal(key, info: renewalInfos[key]?.info, latestProductId: latest.first { $0.key == key }?.element.transaction.productId)
        }
        return ("[" + latest.map(\.element.json).joined(separator: ",") + "]",
                "[" + pending.map(\.json).joined(separator: ",") + "]")
    }

    /// A transaction listed, with the key it belongs to.
    private struct Listed {
        let element: VerifyReceiptTransaction
        let key: SubscriptionKey
        let copy: LedgerCopy
    }

    /// Rule 1 over the stored records (ReceiptKit's ``WinningCopies``): each transaction's winning
    /// copy, and each key's winning renewal info.
    private static func winningCopies(of inputs: [StoredInput], keys: Set<SubscriptionKey>) throws
        -> (transactions: [Listed], renewalInfos: [SubscriptionKey: (info: StoredRecord.RenewalInfo, copy: LedgerCopy)])
    {
        var transactions = WinningCopies<NormalizedTransaction>()
        var renewalInfos = WinningCopies<(info: StoredRecord.RenewalInfo, key: SubscriptionKey)>()
        for input in inputs {
            let record = try StoredRecord(input)
            for (transaction, copy) in record.transactionCopies(receivedAt: input.receivedAt) {
                guard transaction.transactionId != nil, let key = copy.key, keys.contains(key) else { continue }
                transactions.offer(copy, with: transaction)
            }
            if let info = record.renewalInfo, let key = keys.first(where: { info.belongs(to: $0) }),
               let copy = record.renewalInfoCopy() {
                renewalInfos.offer(copy, with: (info, key))
            }
        }
        let listed = transactions.all.compactMap { winner -> Listed? in
            guard let key = winner.copy.key else { return nil }
            var element = VerifyReceiptTransaction(winner.companion)
            element.cancellationDate = winner.copy.revocationDate
            return Listed(element: element, key: key, copy: winner.copy)
        }
        var byKey: [SubscriptionKey: (info: StoredRecord.RenewalInfo, copy: LedgerCopy)] = [:]
        for winner in renewalInfos.all { byKey[winner.companion.key] = (winner.companion.info, winner.copy) }
        return (listed, byKey)
    }

    /// One element of `pending_renewal_info`, rendered by ReceiptKitFormats.
    private static func pendingRenewal(
        _ key: SubscriptionKey, info: StoredRecord.RenewalInfo?, latestProductId: String?
    ) -> VerifyReceiptPendingRenewal {
        var element = VerifyReceiptPendingRenewal(originalTransactionId: key.originalTransactionId)
        element.autoRenewProductId = info?.autoRenewProductId
        element.productId = info?.productId ?? latestProductId
        element.autoRenewStatus = info?.autoRenewStatus?.text
        element.expirationIntent = info?.expirationIntent?.text
        element.isInBillingRetryPeriod = info?.isInBillingRetryPeriod
        element.gracePeriodExpiresDate = info?.gracePeriodExpiresDate?.timestamp
        element.priceConsentStatus = info?.priceIncreaseStatus?.text
        element.offerCodeRefName = info?.offer?.type == "offer_code" ? info?.offer?.id : nil
        element.promotionalOfferId = info?.offer?.type == "promotional" ? info?.offer?.id : nil
        return element
    }
}
