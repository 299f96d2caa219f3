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

    init(
        kind: PayloadKind, environment: String?, validatedAt: Timestamp,
        validationTimeSource: ValidationTimeSource = .payloadDate, revocation: RevocationResult? = nil,
        chain: ChainSummary,
        transactions: [NormalizedTransaction] = [], notification: NotificationPayload? = nil,
        renewalInfo: JWSRenewalInfo? = nil, app: NormalizedApp? = nil, realtimeRequest: RealtimeRequest? = nil,
        receipt: AppReceipt? = nil
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
    }

    /// The record of a verified transaction.
    public init(_ verified: Verified<JWSTransaction>) {
        self.init(kind: .transaction, environment: verified.payload.rawEnvironment, validatedAt: verified.validatedAt,
                  validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
                  chain: verified.chain, transactions: [NormalizedTransaction(verified.payload)])
    }

    /// The record of verified renewal info.
    public init(_ verified: Verified<JWSRenewalInfo>) {
        self.init(kind: .renewalInfo, environment: verified.payload.rawEnvironment, validatedAt: verified.validatedAt,
                  validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
                  chain: verified.chain, renewalInfo: verified.payload)
    }

    /// The record of a verified AppTransaction.
    public init(_ verified: Verified<AppTransaction>) {
        self.init(kind: .appTransaction, environment: verified.payload.rawReceiptType, validatedAt: verified.validatedAt,
                  validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
                  chain: verified.chain, app: NormalizedApp(verified.payload))
    }

    /// The record of a verified realtime request.
    public init(_ verified: Verified<RealtimeRequest>) {
        self.init(kind: .realtimeRequest, environment: verified.payload.rawEnvironment, validatedAt: verified.validatedAt,
                  validationTimeSource: verified.validationTimeSource, revocation: verified.revocation,
                  chain: verified.chain, realtimeRequest: verified.payload)
    }

    /// The record of a verified notification, with its nested transaction, renewal info and app.
    public init(_ verified: VerifiedNotification) {
        let notification = verified.notification
        self.init(
            kind: .notification, environment: notification.payload.rawEnvironment,
            validatedAt: notification.validatedAt, validationTimeSource: notification.validationTimeSource,
            revocation: verified.revocation, chain: notification.chain,
            transactions: verified.transaction.map { [NormalizedTransaction($0.payload)] } ?? [],
            notification: notification.payload, renewalInfo: verified.renewalInfo?.payload,
            app: verified.appTransaction.map { NormalizedApp($0.payload) })
    }

    func write(label: InputLabel, to writer: inout JSONWriter) {
        writer.object { json in
            label.write(to: &json)
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
        json(label: InputLabel(number: input), pretty: pretty)
    }

    /// The record as JSON, labelled with its input number and, for joinable batches, an id.
    ///
    /// - Parameters:
    ///   - label: What identifies the input.
    ///   - pretty: Whether to indent.
    public func json(label: InputLabel, pretty: Bool = false) -> String {
        var writer = JSONWriter(pretty: pretty)
        write(label: label, to: &writer)
        return writer.text
    }
}

/// What identifies an input in its output record: its number, and in joinable batches the id the
/// caller gave it (`verify-receipt --with-ids`), so a result can be matched to its source row.
public struct InputLabel: Sendable, Hashable {
    /// The 1-based input number, printed first as `input`; `nil` omits it.
    public var number: Int?
    /// Whether the record carries an `id` member.
    public var hasID: Bool
    /// The caller's id, printed as `id` when ``hasID`` (`null` when `nil`).
    public var id: String?

    /// A label with a number and no id member.
    ///
    /// - Parameter number: The 1-based input number, or `nil`.
    public init(number: Int?) {
        self.number = number
        self.hasID = false
        self.id = nil
    }

    /// A label with a number and an `id` member.
    ///
    /// - Parameters:
    ///   - number: The 1-based input number, or `nil`.
    ///   - id: The caller's id; `nil` prints `"id": null` (an input line that carried none).
    public init(number: Int?, id: String?) {
        self.number = number
        self.hasID = true
        self.id = id
    }

    func write(to json: inout JSONWriter) {
        if let number { json.member("input", number) }
        if hasID { json.member("id", id) }
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
        json(label: InputLabel(number: input), pretty: pretty)
    }

    /// The outcome as JSON, labelled with its input number and, for joinable batches, an id.
    ///
    /// - Parameters:
    ///   - label: What identifies the input.
    ///   - pretty: Whether to indent.
    public func json(label: InputLabel, pretty: Bool = false) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2048)
        appendJSON(label: label, pretty: pretty, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the bytes of ``json(label:pretty:)`` to `buffer`, without a final newline and
    /// without building a string: the form to use when writing many records.
    ///
    /// - Parameters:
    ///   - label: What identifies the input.
    ///   - pretty: Whether to indent.
    ///   - buffer: The bytes to append to.
    public func appendJSON(label: InputLabel, pretty: Bool = false, to buffer: inout [UInt8]) {
        JSONWriter.append(to: &buffer, pretty: pretty) { json in
            switch self {
            case .verified(let record):
                record.write(label: label, to: &json)
            case .rejected(let error):
                json.object { json in
                    label.write(to: &json)
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
