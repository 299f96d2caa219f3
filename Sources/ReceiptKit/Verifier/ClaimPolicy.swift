/// The configured claims, checked after the signature: identity (bundle id, then App Apple ID)
/// before environment, as Apple's libraries do, and each only for the payload types that
/// define the field.
struct ClaimPolicy {
    let bundleId: String?
    let appAppleId: Int64?
    let environment: AppStoreEnvironment?

    /// A payload's claimable fields.
    enum Subject {
        case transaction(JWSTransaction)
        case renewalInfo(JWSRenewalInfo)
        case notification(NotificationPayload)
        case appTransaction(AppTransaction)
        case realtimeRequest(RealtimeRequest)
        case receipt(AppReceipt)
    }

    /// The field values of a subject; `.some(nil)` is a defined but absent field, `nil` a field
    /// the payload type does not define.
    private struct Fields {
        let what: String
        let bundleId: String??
        let appAppleId: Int64??
        let environment: String?
    }

    private func fields(_ subject: Subject) -> Fields {
        switch subject {
        case .transaction(let payload):
            Fields(what: "transaction", bundleId: .some(payload.bundleId), appAppleId: nil, environment: payload.rawEnvironment)
        case .renewalInfo(let payload):
            Fields(what: "renewal info", bundleId: nil, appAppleId: nil, environment: payload.rawEnvironment)
        case .notification(let payload):
            Fields(what: "notification", bundleId: .some(payload.bundleId), appAppleId: .some(payload.appAppleId),
                   environment: payload.rawEnvironment)
        case .appTransaction(let payload):
            Fields(what: "app transaction", bundleId: .some(payload.bundleId), appAppleId: .some(payload.appAppleId),
                   environment: payload.rawReceiptType)
        case .realtimeRequest(let payload):
            Fields(what: "realtime request", bundleId: nil, appAppleId: .some(payload.appAppleId),
                   environment: payload.rawEnvironment)
        case .receipt(let payload):
            // A receipt's app item id is 0 outside Production: that is no App Apple ID.
            Fields(what: "receipt", bundleId: .some(payload.bundleId),
                   appAppleId: .some(payload.appItemId.flatMap { $0 == 0 ? nil : $0 }),
                   environment: payload.environment?.rawValue ?? payload.rawReceiptType)
        }
    }

    /// Checks `subject` against the configured claims.
    ///
    /// - Throws: `bundle_id_mismatch`, `app_apple_id_mismatch` or `environment_mismatch`.
    func check(_ subject: Subject) throws {
        let fields = fields(subject)
        if let expected = bundleId, case .some(let actual) = fields.bundleId, actual != expected {
            throw ReceiptKitError(.bundleIDMismatch,
                                  "\(fields.what) bundle id is \(Self.quoted(actual)), expected \"\(expected)\"")
        }
        if let expected = appAppleId, case .some(let actual) = fields.appAppleId {
            if let actual, actual != expected {
                throw ReceiptKitError(.appAppleIDMismatch, "\(fields.what) appAppleId is \(actual), expected \(expected)")
            }
            if actual == nil, environment == .production {
                throw ReceiptKitError(.appAppleIDMismatch,
                                      "\(fields.what) has no appAppleId; a Production verifier expects \(expected)")
            }
        }
        if let expected = environment, fields.environment != expected.rawValue {
            throw ReceiptKitError(.environmentMismatch,
                                  "\(fields.what) environment is \(Self.quoted(fields.environment)), expected \"\(expected.rawValue)\"")
        }
    }

    private static func quoted(_ value: String?) -> String {
        value.map { "\"\($0)\"" } ?? "absent"
    }
}
