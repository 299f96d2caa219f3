/// The App Store server environment a payload belongs to.
///
/// Payload models keep Apple's raw string (`rawEnvironment`) so an unknown value still decodes;
/// this enum is the typed view of the values ReceiptKit knows.
public enum AppStoreEnvironment: String, Sendable, Hashable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    case xcode = "Xcode"
    case localTesting = "LocalTesting"
}

/// The kinds of signed payload ReceiptKit verifies.
public enum PayloadKind: String, Sendable, Hashable, CaseIterable {
    /// A StoreKit 2 transaction (`JWSTransactionDecodedPayload`).
    case transaction
    /// Subscription renewal info (`JWSRenewalInfoDecodedPayload`).
    case renewalInfo = "renewal_info"
    /// An App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`).
    case notification
    /// An AppTransaction.
    case appTransaction = "app_transaction"
    /// A retention-messaging realtime request (`DecodedRealtimeRequestBody`).
    case realtimeRequest = "realtime_request"
    /// A legacy PKCS #7 App Store receipt.
    case receipt
}

/// A normalization of one of Apple's string enumerations: known values map to ReceiptKit's
/// snake_case spelling, unknown ones pass through raw, never an error.
struct EnumMapping: Sendable {
    private let table: [String: String]

    init(_ table: [String: String]) {
        self.table = table
    }

    func normalize(_ raw: String?) -> String? {
        raw.map { table[$0] ?? $0 }
    }
}

enum Normalization {
    static let productType = EnumMapping([
        "Auto-Renewable Subscription": "auto_renewable_subscription",
        "Non-Renewing Subscription": "non_renewing_subscription",
        "Consumable": "consumable",
        "Non-Consumable": "non_consumable",
    ])
    static let ownershipType = EnumMapping(["PURCHASED": "purchased", "FAMILY_SHARED": "family_shared"])
    static let transactionReason = EnumMapping(["PURCHASE": "purchase", "RENEWAL": "renewal"])
    static let offerDiscountType = EnumMapping([
        "FREE_TRIAL": "free_trial", "PAY_AS_YOU_GO": "pay_as_you_go", "PAY_UP_FRONT": "pay_up_front",
        "ONE_TIME": "one_time",
    ])

    /// Apple's `offerType` integers.
    static func offerType(_ raw: Int32?) -> String? {
        switch raw {
        case nil: nil
        case 1: "introductory"
        case 2: "promotional"
        case 3: "offer_code"
        case 4: "win_back"
        case let value?: String(value)
        }
    }

    /// Apple's `revocationReason` integers.
    static func revocationReason(_ raw: Int32?) -> String? {
        switch raw {
        case nil: nil
        case 0: "refunded_for_other_reason"
        case 1: "refunded_due_to_issue"
        case let value?: String(value)
        }
    }
}
