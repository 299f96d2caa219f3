/// A payload whose identity and environment the verifier's configured claims are checked against:
/// every kind of signed payload, and the legacy receipt.
protocol ClaimablePayload: Sendable {
    /// The kind, which names the payload in claim failures ("app transaction bundle id is …").
    static var kind: PayloadKind { get }
    /// The fields the claims are checked against.
    var claims: PayloadClaims { get }
}

/// A payload Apple signs as a compact JWS: all that the verifier's one generic path needs to know
/// of it. Adding a kind is a model that conforms, a case of ``PayloadKind`` and its rendering.
protocol SignedPayload: ClaimablePayload {
    /// Decodes the payload from its JSON object.
    ///
    /// - Throws: ``ReceiptKitError`` with the view's code when a member has the wrong JSON type.
    init(json: JSONObject) throws

    /// The payload's own date: the instant its chain is validated at under
    /// ``ValidationTime/signedDate``, `nil` when the payload carries none.
    var payloadDate: Timestamp? { get }
}

/// The fields of a payload that claims are checked against.
///
/// For the bundle id and the App Apple ID, `nil` is a field the payload's kind does not define
/// (never checked) and `.some(nil)` a defined field this payload lacks.
struct PayloadClaims {
    let bundleId: String??
    let appAppleId: Int64??
    /// The raw environment the payload declares; also the record's `environment`.
    let environment: String?

    init(bundleId: String?? = nil, appAppleId: Int64?? = nil, environment: String?) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }
}
