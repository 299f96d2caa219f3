import Foundation
import ReceiptKit

/// The one place the server meets ReceiptKit's ``EntitlementLedger``: each key's stored state is
/// the ledger of the records folded into it (order-independent and idempotent), as the JSON of
/// ``EntitlementLedger/jsonBytes()``, which is the JSON of its `Codable` form, so a state stored
/// with `JSONEncoder` still reads; and a state is the ledger's ``EntitlementLedger/state(for:at:)``.
/// Every entitlement rule lives in the ledger; none here.
enum EntitlementFolding {
    /// The fold of one verified record into one key's ledger.
    static func fold(_ record: VerificationRecord, into key: SubscriptionKey) -> KeyFold {
        KeyFold(key: key) { stored in
            var ledger = try stored.map { try decode($0, of: key) } ?? EntitlementLedger()
            ledger.add(record)
            return Data(ledger.jsonBytes())
        }
    }

    /// The ledger a key's stored state holds.
    static func ledger(of stored: StoredSubscription) throws -> EntitlementLedger? {
        guard let data = stored.state else { return nil }
        return try decode(data, of: stored.key)
    }

    /// A stored state's ledger; a state that does not decode means a damaged store.
    private static func decode(_ data: Data, of key: SubscriptionKey) throws -> EntitlementLedger {
        do {
            return try EntitlementLedger(jsonBytes: Array(data))
        } catch {
            throw StoreError("the stored state of \(key.originalTransactionId) does not decode: \(error)")
        }
    }

    /// The key's state at an instant, or `nil` when no transaction of it was known then.
    static func state(of stored: StoredSubscription, at instant: Timestamp) throws -> SubscriptionState? {
        guard let ledger = try ledger(of: stored) else { return nil }
        return ledger.state(for: stored.key, at: instant)
    }
}
