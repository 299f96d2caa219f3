import Foundation
import ReceiptKit

/// The console's search (`GET /v1/search?q=`): what a text names among the stored subscriptions —
/// a customer id (or an `appAccountToken`, in any case), an original transaction id, a stored
/// transaction id.
struct Search: Sendable {
    /// What the text is, with the subscriptions it names.
    struct Match: Sendable, Equatable {
        enum Kind: String, Sendable {
            case customer, subscription, transaction
        }

        let kind: Kind
        /// The customer id matched (`customer`).
        let customerId: String?
        /// The transaction id matched (`transaction`).
        let transactionId: String?
        let subscriptions: [SubscriptionKey]
    }

    /// The longest text taken, in characters (Unicode scalars).
    static let maximumLength = 1_024

    let store: Store

    /// The text searched for: `given` trimmed of the white space JSON Schema's `\s` names
    /// (ECMA-262's WhiteSpace and LineTerminator), so that `Server/openapi.yaml`'s pattern says
    /// exactly which texts are empty.
    ///
    /// - Throws: ``InvalidInput`` for a text longer than ``maximumLength``, holding U+0000, or
    ///   empty once trimmed.
    static func query(_ given: String) throws(InvalidInput) -> String {
        guard given.unicodeScalars.count <= maximumLength, !given.unicodeScalars.contains("\u{0}") else {
            throw InvalidInput("q must be at most \(maximumLength) characters, none of them U+0000")
        }
        let query = String(String.UnicodeScalarView(
            given.unicodeScalars.drop(while: isSpace).reversed().drop(while: isSpace).reversed()))
        guard !query.isEmpty else {
            throw InvalidInput("q is empty; give a customer id, an original transaction id, a transaction id or an appAccountToken")
        }
        return query
    }

    /// ECMA-262's WhiteSpace and LineTerminator.
    static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: true
        default: false
        }
    }

    /// Everything `query` (trimmed: ``query(_:)``) names: as a customer id, then as an original
    /// transaction id, then as a transaction id of a subscription not already matched.
    func matches(_ query: String) async throws -> [Match] {
        let store = self.store
        var matches: [Match] = []
        var customerIds = [query]
        // Apple writes an appAccountToken, a UUID, in lower case; one copied from elsewhere may not be.
        if let uuid = UUID(uuidString: query), uuid.uuidString.lowercased() != query {
            customerIds.append(uuid.uuidString.lowercased())
        }
        for customerId in customerIds {
            let keys = try await store.run { try await store.keys(customerId: customerId) }
            guard !keys.isEmpty else { continue }
            matches.append(Match(kind: .customer, customerId: customerId, transactionId: nil, subscriptions: keys))
        }
        let subscriptionKeys = try await store.run { try await store.keys(originalTransactionId: query) }
        if !subscriptionKeys.isEmpty {
            matches.append(Match(kind: .subscription, customerId: nil, transactionId: nil, subscriptions: subscriptionKeys))
        }
        // A first purchase's transaction id is its original transaction id, found above.
        let transactionKeys = try await store.run { try await store.keys(transactionId: query) }
            .filter { !subscriptionKeys.contains($0) }
        if !transactionKeys.isEmpty {
            matches.append(Match(kind: .transaction, customerId: nil, transactionId: query, subscriptions: transactionKeys))
        }
        return matches
    }
}
