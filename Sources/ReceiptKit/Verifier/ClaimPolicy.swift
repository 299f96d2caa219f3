/// The configured claims, checked after the signature: identity (bundle id, then App Apple ID)
/// before environment, as Apple's libraries do, and each only for the payload kinds that
/// define the field (see ``PayloadClaims``).
struct ClaimPolicy {
    let bundleId: String?
    let appAppleId: Int64?
    let environment: AppStoreEnvironment?

    /// Checks `payload` against the configured claims.
    ///
    /// - Throws: `bundle_id_mismatch`, `app_apple_id_mismatch` or `environment_mismatch`.
    func check<Payload: ClaimablePayload>(_ payload: Payload) throws {
        let fields = payload.claims
        if let expected = bundleId, case .some(let actual) = fields.bundleId, actual != expected {
            throw ReceiptKitError(.bundleIDMismatch,
                                  "\(Self.what(Payload.kind)) bundle id is \(Self.quoted(actual)), expected \"\(expected)\"")
        }
        if let expected = appAppleId, case .some(let actual) = fields.appAppleId {
            if let actual, actual != expected {
                throw ReceiptKitError(.appAppleIDMismatch, "\(Self.what(Payload.kind)) appAppleId is \(actual), expected \(expected)")
            }
            if actual == nil, environment == .production {
                throw ReceiptKitError(.appAppleIDMismatch,
                                      "\(Self.what(Payload.kind)) has no appAppleId; a Production verifier expects \(expected)")
            }
        }
        if let expected = environment, fields.environment != expected.rawValue {
            throw ReceiptKitError(
                .environmentMismatch,
                "\(Self.what(Payload.kind)) environment is \(Self.quoted(fields.environment)), expected \"\(expected.rawValue)\"")
        }
    }

    /// How reasons name a kind: its raw value in words ("renewal info", "app transaction").
    private static func what(_ kind: PayloadKind) -> String {
        kind.rawValue.split(separator: "_").joined(separator: " ")
    }

    private static func quoted(_ value: String?) -> String {
        value.map { "\"\($0)\"" } ?? "absent"
    }
}
