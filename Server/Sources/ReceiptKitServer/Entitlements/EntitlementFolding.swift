import Foundation
import ReceiptKit

/// The one place the server meets ReceiptKit's ``EntitlementLedger``: each key's stored state is
/// the ledger of the records folded into it, as JSON (the ledger is `Codable`, order-independent
/// and idempotent), and a state is the ledger's ``EntitlementLedger/state(for:at:)``. Every
/// entitlement rule lives in the ledger; none here.
enum EntitlementFolding {
    /// The fold of one verified record into one key's ledger.
    static func fold(_ record: VerificationRecord, into key: SubscriptionKey) -> KeyFold {
        KeyFold(key: key) { stored in
            var ledger = try stored.map { try JSONDecoder().decode(EntitlementLedger.self, from: $0) } ?? EntitlementLedger()
            ledger.add(record)
            return try JSONEncoder().encode(ledger)
        }
    }

    /// The ledger a key's stored state holds.
    static func ledger(of stored: StoredSubscription) throws -> EntitlementLedger? {
        guard let data = stored.state else { return nil }
        do {
            return try JSONDecoder().decode(EntitlementLedger.self, from: data)
        } catch {
            throw StoreError("the stored state of \(stored.key.originalTransactionId) does not decode: \(error)")
        }
    }

    /// The key's state at an instant, or `nil` when no transaction of it was known then.
    static func state(of stored: StoredSubscription, at instant: Timestamp) throws -> SubscriptionState? {
        guard let ledger = try ledger(of: stored) else { return nil }
        return ledger.state(for: stored.key, at: instant)
    }
}
