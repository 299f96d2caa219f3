public import struct Foundation.Date

/// Verifies App Store signed data offline: JWS signature, certificate chain to a pinned or
/// supplied root, Apple's marker extensions, validity at the validation time, then the
/// configured claims.
///
/// Configure one verifier and share it: it is immutable, `Sendable`, and every method may be
/// called from any number of threads at once.
///
/// ```swift
/// let verifier = AppStoreVerifier(.init(bundleId: "com.example.app", environment: .production))
/// let transaction = try verifier.verifyTransaction(jws)
/// ```
public struct AppStoreVerifier: Sendable {
    /// The configuration this verifier was created with.
    public let configuration: Configuration
    let clock: @Sendable () -> Date
    /// The configuration's apps and environments, built once for lookup.
    let claims: ClaimPolicy
    private let chainValidator: JWSChainValidator
    /// Headers already validated, found by their base64url segment: tokens signed by one leaf
    /// carry byte-identical headers, whose decoding costs more than the payload's.
    private let headerCache: HeaderCache
    /// Legacy receipt chains already validated (see ``ReceiptChainValidator``).
    let receiptChainCache: BoundedCache<ReceiptChainKey, CachedChain>
    /// The revocation checker, `nil` when the policy is off.
    let revocationChecker: RevocationChecker?

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - configuration: What to trust and check.
    ///   - clock: The current time, read only for ``ValidationTime/now`` and for payloads without
    ///     a date. Defaults to the system clock.
    public init(_ configuration: Configuration = Configuration(), clock: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.clock = clock
        self.claims = ClaimPolicy(apps: configuration.apps, environments: configuration.environments)
        self.chainValidator = JWSChainValidator(anchors: configuration.anchors, cacheCapacity: configuration.cacheCapacity)
        self.headerCache = HeaderCache(capacity: configuration.cacheCapacity)
        self.receiptChainCache = BoundedCache(capacity: configuration.cacheCapacity)
        self.revocationChecker = configuration.revocation.mode == .off ? nil : RevocationChecker(policy: configuration.revocation)
    }

    /// How many OCSP requests this verifier has sent (0 unless a revocation policy uses OCSP).
    public var ocspRequestCount: Int { revocationChecker?.requestCount ?? 0 }

    /// Checks a validated chain for revocation under the configured policy, at the clock.
    ///
    /// - Returns: The result, or `nil` when the policy is off.
    func checkRevocation(_ chain: ValidatedChain, signedAt: Timestamp) throws -> RevocationResult? {
        guard let revocationChecker else { return nil }
        return try revocationChecker.check(path: chain.path, names: chain.names, signedAt: signedAt, now: Timestamp(clock()))
    }

    // MARK: One method per payload kind

    /// Verifies a StoreKit 2 transaction JWS (`signedTransactionInfo`).
    ///
    /// - Parameter jws: The compact JWS.
    /// - Returns: The verified transaction.
    /// - Throws: ``ReceiptKitError`` naming the failed check.
    public func verifyTransaction(_ jws: String) throws -> Verified<JWSTransaction> {
        try verify(bytes: Array(jws.utf8), as: JWSTransaction.self)
    }

    /// Verifies a subscription renewal info JWS (`signedRenewalInfo`).
    ///
    /// - Parameter jws: The compact JWS.
    /// - Returns: The verified renewal info.
    /// - Throws: ``ReceiptKitError`` naming the failed check.
    public func verifyRenewalInfo(_ jws: String) throws -> Verified<JWSRenewalInfo> {
        try verify(bytes: Array(jws.utf8), as: JWSRenewalInfo.self)
    }

    /// Verifies an AppTransaction JWS, validated at its `receiptCreationDate` by default.
    ///
    /// - Parameter jws: The compact JWS.
    /// - Returns: The verified AppTransaction.
    /// - Throws: ``ReceiptKitError`` naming the failed check.
    public func verifyAppTransaction(_ jws: String) throws -> Verified<AppTransaction> {
        try verify(bytes: Array(jws.utf8), as: AppTransaction.self)
    }

    /// Verifies a retention-messaging realtime request JWS.
    ///
    /// - Parameter jws: The compact JWS.
    /// - Returns: The verified request.
    /// - Throws: ``ReceiptKitError`` naming the failed check.
    public func verifyRealtimeRequest(_ jws: String) throws -> Verified<RealtimeRequest> {
        try verify(bytes: Array(jws.utf8), as: RealtimeRequest.self)
    }

    /// Verifies an App Store Server Notification V2 (`signedPayload`) and every JWS nested in it.
    ///
    /// A nested `signedTransactionInfo`, `signedRenewalInfo` or `signedAppTransactionInfo` is
    /// verified with the same anchors, validation-time rule and claims, and must be of the
    /// notification's own app and environment where those are checked; if any fails, the
    /// notification is rejected with its error, the field named.
    ///
    /// - Parameter signedPayload: The notification's compact JWS.
    /// - Returns: The verified notification and its verified nested payloads.
    /// - Throws: ``ReceiptKitError`` naming the failed check.
    public func verifyNotification(_ signedPayload: String) throws -> VerifiedNotification {
        try verifyNotification(decode(Array(signedPayload.utf8)))
    }

    // MARK: Any kind

    /// Verifies a JWS of any kind and normalizes it.
    ///
    /// Without `kind`, the kind is told from the payload's members, first match wins:
    /// `notificationType` → notification; `receiptType` or `receiptCreationDate` → app
    /// transaction; `userLocale` or `requestIdentifier` → realtime request; `transactionId`,
    /// `bundleId`, `purchaseDate` or `type` → transaction; anything else → renewal info.
    ///
    /// - Parameters:
    ///   - jws: The compact JWS.
    ///   - kind: The kind to verify it as, or `nil` to detect it.
    /// - Returns: The normalized record.
    /// - Throws: ``ReceiptKitError`` naming the failed check.
    public func verify(_ jws: String, as kind: PayloadKind? = nil) throws -> VerificationRecord {
        try verify(jwsBytes: Array(jws.utf8), as: kind)
    }

    func verify(jwsBytes: [UInt8], as kind: PayloadKind?) throws -> VerificationRecord {
        let decoded = try decode(jwsBytes)
        switch kind ?? decoded.detectedKind() {
        case .notification: return VerificationRecord(try verifyNotification(decoded))
        case .appTransaction: return VerificationRecord(try verify(decoded, as: AppTransaction.self))
        case .realtimeRequest: return VerificationRecord(try verify(decoded, as: RealtimeRequest.self))
        case .transaction: return VerificationRecord(try verify(decoded, as: JWSTransaction.self))
        case .renewalInfo: return VerificationRecord(try verify(decoded, as: JWSRenewalInfo.self))
        case .receipt:
            throw ReceiptKitError(.unrecognizedInput, "a JWS cannot be verified as a legacy receipt")
        }
    }

    // MARK: Internals

    /// The one path of every signed payload kind: decodes the payload, authenticates it at its
    /// own date (see ``SignedPayload/payloadDate``), then checks the claims — for a JWS nested in
    /// a notification, against the notification's match (`scope`).
    private func verify<Payload: SignedPayload>(
        _ decoded: DecodedJWS, as _: Payload.Type, within scope: ClaimPolicy.Match? = nil
    ) throws -> Verified<Payload> {
        let payload = try decoded.payload(Payload.init(json:))
        let authentication = try authenticate(decoded, date: payload.payloadDate)
        return Verified(payload: payload, authentication, matchedApp: try claims.check(payload, within: scope).app)
    }

    private func verify<Payload: SignedPayload>(bytes: [UInt8], as type: Payload.Type) throws -> Verified<Payload> {
        try verify(decode(bytes), as: type)
    }

    private func verifyNotification(_ decoded: DecodedJWS) throws -> VerifiedNotification {
        let payload = try decoded.payload(NotificationPayload.init(json:))
        let authentication: Authentication
        if payload.signedDate == nil, configuration.validationTime == .signedDate {
            // The early-2022 shape has no signedDate: its instant is the latest signedDate of the
            // JWS nested in it, read before anything is trusted, from bytes its signature covers.
            authentication = try authenticate(decoded, date: nestedSignedDate(of: payload), source: .nestedSignedDate)
        } else {
            authentication = try authenticate(decoded, date: payload.signedDate)
        }
        // The notification's own claims are checked last, as before; what they matched (when they
        // hold) is what each nested JWS must match too: the same app and environment.
        let match = Result { try claims.check(payload) }
        func nested<Nested: SignedPayload>(_ jws: [UInt8]?, _ field: String, as _: Nested.Type) throws -> Verified<Nested>? {
            guard let jws else { return nil }
            do {
                return try verify(decode(jws), as: Nested.self, within: try? match.get())
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "\(field): \(error.reason)", underlyingError: error.underlyingError)
            }
        }
        let transaction = try nested(
            payload.data?.signedTransactionInfoBytes, "data.signedTransactionInfo", as: JWSTransaction.self)
        let renewalInfo = try nested(payload.data?.signedRenewalInfoBytes, "data.signedRenewalInfo", as: JWSRenewalInfo.self)
        let appTransaction = try nested(
            payload.appData?.signedAppTransactionInfoBytes, "appData.signedAppTransactionInfo", as: AppTransaction.self)
        return VerifiedNotification(
            notification: Verified(payload: payload, authentication, matchedApp: try match.get().app),
            transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction)
    }

    /// The latest `signedDate` of the JWS nested in a notification, or `nil` when none carries one.
    ///
    /// The nested payloads are parsed, not yet verified: the dates are only as trustworthy as the
    /// notification's signature over them, which ``authenticate(_:date:source:)`` then checks at
    /// the instant they give, before the nested JWS are verified in full, each at its own date.
    /// A nested JWS that cannot be decoded is rejected here with its field named.
    private func nestedSignedDate(of payload: NotificationPayload) throws -> Timestamp? {
        func date(_ jws: [UInt8]?, _ field: String, _ read: (JSONObject) throws -> Timestamp?) throws -> Timestamp? {
            guard let jws else { return nil }
            do {
                return try decode(jws).payload(read)
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "\(field): \(error.reason)", underlyingError: error.underlyingError)
            }
        }
        let dates = [
            try date(payload.data?.signedTransactionInfoBytes, "data.signedTransactionInfo") {
                try JWSTransaction(json: $0).signedDate
            },
            try date(payload.data?.signedRenewalInfoBytes, "data.signedRenewalInfo") { try JWSRenewalInfo(json: $0).signedDate },
            try date(payload.appData?.signedAppTransactionInfoBytes, "appData.signedAppTransactionInfo") {
                try AppTransaction(json: $0).signedDate
            },
        ]
        return dates.compactMap { $0 }.max()
    }

    /// Splits and decodes a token: size, segments, header (unless already validated), payload JSON.
    private func decode(_ token: [UInt8]) throws -> DecodedJWS {
        let jws = try CompactJWS(token, maximumSize: configuration.maximumJWSSize)
        let validated = headerCache.value(for: jws.headerSegment)
        let header = try validated?.header ?? JWSHeader(jws.decodedHeader())
        let payload = try JSONDocument(parsingObject: jws.payload, code: .malformedPayload, what: "JWS payload")
        return DecodedJWS(jws: jws, header: header, validatedHeader: validated, payload: payload)
    }

    /// Validates the chain at the validation time and verifies the signature under its leaf.
    ///
    /// A header validated before is reused while the validation time falls inside its chain's
    /// window; outside it, the chain is validated again from scratch, which reports the failure.
    private func authenticate(
        _ decoded: DecodedJWS, date: Timestamp?, source: ValidationTimeSource = .payloadDate
    ) throws -> Authentication {
        let (time, resolvedSource) = configuration.validationTime.resolve(payloadDate: date, source: source, clock: clock)
        let chain: ValidatedChain
        let signingPrefix: SHA256Prefix?
        if let validated = decoded.validatedHeader, validated.chain.covers(time) {
            chain = validated.chain.chain
            signingPrefix = validated.signingPrefix
        } else {
            let (validatedChain, window) = try chainValidator.validate(decoded.header.certificateChain, at: time)
            chain = validatedChain
            signingPrefix = decoded.jws.signingPrefix.withUnsafeBytes(SHA256Prefix.init)
            if let window, let signingPrefix {
                headerCache.insert(ValidatedHeader(
                    segment: Array(decoded.jws.headerSegment), header: decoded.header,
                    chain: CachedChain(chain: chain, window: window), signingPrefix: signingPrefix))
            }
        }
        let signature = try ES256Signature(raw: decoded.jws.signature)
        guard let digest = decoded.jws.payloadSegment.withUnsafeBytes({ signingPrefix?.digest(appending: $0) }) else {
            throw ReceiptKitError(.invalidSignature, "the signing input could not be hashed (OpenSSL failed)")
        }
        guard chain.leafKey.verifyECDSA(derSignature: signature.der, digest: digest) else {
            throw ReceiptKitError(.invalidSignature, "the ES256 signature does not verify under the leaf x5c[0] key")
        }
        // Only a chain that validated and a signature that verified ever cause an OCSP request.
        let revocation = try checkRevocation(chain, signedAt: time)
        return Authentication(chain: chain.summary, validatedAt: time, validationTimeSource: resolvedSource,
                              revocation: revocation)
    }
}

/// A JWS split and decoded, with its payload parsed as JSON but not yet trusted.
struct DecodedJWS {
    let jws: CompactJWS
    let header: JWSHeader
    /// The cache's entry when this header was validated before.
    let validatedHeader: ValidatedHeader?
    let payload: JSONDocument

    /// Decodes the payload model; type errors are `malformed_payload`.
    func payload<Model>(_ decode: (JSONObject) throws -> Model) throws -> Model {
        try payload.withRoot(code: .malformedPayload, decode)
    }

    /// The payload kind told from its members (see ``AppStoreVerifier/verify(_:as:)``).
    func detectedKind() -> PayloadKind {
        payload.withRoot(code: .malformedPayload) { root in
            if root.contains("notificationType") { return .notification }
            if root.contains("receiptType") || root.contains("receiptCreationDate") { return .appTransaction }
            if root.contains("userLocale") || root.contains("requestIdentifier") { return .realtimeRequest }
            if ["transactionId", "bundleId", "purchaseDate", "type"].contains(where: root.contains) { return .transaction }
            return .renewalInfo
        }
    }
}
