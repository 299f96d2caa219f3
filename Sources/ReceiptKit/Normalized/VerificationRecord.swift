/// One verified input in ReceiptKit's normalized schema: what `verify-receipt` prints.
public struct VerificationRecord: Sendable {
    /// What the input was.
    public let kind: PayloadKind
    /// The environment the payload declares (raw: `Production`, `Sandbox`, `Xcode`, …).
    public let environment: String?
    /// The instant the chain was validated at.
    public let validatedAt: Timestamp
    /// Where ``validatedAt`` came from; printed as `validation_time_source` only when it is not
    /// the payload's own date although ``ValidationTime/signedDate`` was asked for.
    public let validationTimeSource: ValidationTimeSource
    /// The revocation result, or `nil` when the policy is ``RevocationPolicy/Mode/off`` (then no
    /// `revocation` member is printed).
    public let revocation: RevocationResult?
    /// The chain the input was verified under.
    public let chain: ChainSummary
    /// The purchases: one for a transaction or a notification that carries one.
    public let transactions: [NormalizedTransaction]
    /// The notification, for `kind == .notification`.
    public let notification: NotificationPayload?
    /// The renewal info: the payload itself, or a notification's nested one.
    public let renewalInfo: JWSRenewalInfo?
    /// The app: an AppTransaction, or a notification's nested one.
    public let app: NormalizedApp?
    /// The realtime request, for `kind == .realtimeRequest`.
    public let realtimeRequest: RealtimeRequest?
    /// The legacy receipt as decoded, for `kind == .receipt`.
    public let receipt: AppReceipt?
    /// The configured app the payload belongs to (``Verified/matchedApp``); not printed.
    public let matchedApp: AppStoreVerifier.App?

    init(
        kind: PayloadKind, environment: String?, validatedAt: Timestamp,
        validationTimeSource: ValidationTimeSource = .payloadDate, revocation: RevocationResult? = nil,
        chain: ChainSummary,
        transactions: [NormalizedTransaction] = [], notification: NotificationPayload? = nil,
        renewalInfo: JWSRenewalInfo? = nil, app: NormalizedApp? = nil, realtimeRequest: RealtimeRequest? = nil,
        receipt: AppReceipt? = nil, matchedApp: AppStoreVerifier.App? = nil
    ) {
        self.kind = kind
        self.environment = environment
        self.validatedAt = validatedAt
        self.validationTimeSource = validationTimeSource
        self.revocation = revocation
        self.chain = chain
        self.transactions = transactions
        self.notification = notification
        self.renewalInfo = renewalInfo
        self.app = app
        self.realtimeRequest = realtimeRequest
        self.receipt = receipt
        self.matchedApp = matchedApp
    }

    /// Writes the record as a JSON object whose first members are those `leading` writes (an
    /// input number, a caller's id).
    package func write(to writer: inout JSONWriter, leading: (inout JSONWriter) -> Void) {
        writer.object { json in
            leading(&json)
            json.member("status", "verified")
            json.member("kind", kind.rawValue)
            json.member("environment", environment)
            json.member("validated_at", validatedAt)
            if validationTimeSource.isPrinted {
                json.member("validation_time_source", validationTimeSource.rawValue)
            }
            json.member("chain") { json in
                json.object { json in
                    json.member("root_sha256", chain.rootSHA256)
                    json.member("leaf_sha256", chain.leafSHA256)
                    json.member("leaf_not_after", chain.leafNotAfter)
                }
            }
            if let revocation {
                json.member("revocation", revocation.status.rawValue)
                if let warning = revocation.warning {
                    json.member("revocation_warning", warning)
                }
            }
            json.member("transactions") { json in
                json.array { json in
                    for transaction in transactions {
                        json.element { transaction.write(to: &$0) }
                    }
                }
            }
            if let notification {
                json.member("notification") { notification.write(to: &$0) }
            }
            if let renewalInfo {
                json.member("renewal_info") { renewalInfo.write(to: &$0) }
            }
            if let app {
                json.member("app") { app.write(to: &$0) }
            }
            if let realtimeRequest {
                json.member("realtime_request") { realtimeRequest.write(to: &$0) }
            }
        }
    }

    /// The record as one line of JSON (or indented JSON when `pretty`).
    ///
    /// - Parameters:
    ///   - input: The 1-based input number to print first, or `nil` to omit it.
    ///   - pretty: Whether to indent.
    public func json(input: Int? = nil, pretty: Bool = false) -> String {
        var writer = JSONWriter(pretty: pretty)
        write(to: &writer) { json in
            if let input { json.member("input", input) }
        }
        return writer.text
    }
}

/// The outcome of verifying one input: a record, or the error that rejected it.
public enum VerificationOutcome: Sendable {
    case verified(VerificationRecord)
    case rejected(ReceiptKitError)

    /// Whether the input verified.
    public var isVerified: Bool {
        if case .verified = self { return true }
        return false
    }

    /// The outcome as JSON: the record, or
    /// `{"input": N, "status": "rejected", "error": {"code": …, "message": …}}`.
    ///
    /// - Parameters:
    ///   - input: The 1-based input number to print first, or `nil` to omit it.
    ///   - pretty: Whether to indent.
    public func json(input: Int? = nil, pretty: Bool = false) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2048)
        appendJSON(input: input, pretty: pretty, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the bytes of ``json(input:pretty:)`` to `buffer`, without a final newline and
    /// without building a string: the form to use when writing many records.
    ///
    /// - Parameters:
    ///   - input: The 1-based input number to print first, or `nil` to omit it.
    ///   - pretty: Whether to indent.
    ///   - buffer: The bytes to append to.
    public func appendJSON(input: Int? = nil, pretty: Bool = false, to buffer: inout [UInt8]) {
        appendJSON(pretty: pretty, to: &buffer) { json in
            if let input { json.member("input", input) }
        }
    }

    /// Appends the outcome as a JSON object whose first members are those `leading` writes.
    package func appendJSON(pretty: Bool, to buffer: inout [UInt8], leading: (inout JSONWriter) -> Void) {
        JSONWriter.append(to: &buffer, pretty: pretty) { json in
            switch self {
            case .verified(let record):
                record.write(to: &json, leading: leading)
            case .rejected(let error):
                json.object { json in
                    leading(&json)
                    json.member("status", "rejected")
                    json.member("error") { json in
                        json.object { json in
                            json.member("code", error.code.rawValue)
                            json.member("message", error.message)
                        }
                    }
                }
            }
        }
    }
}
