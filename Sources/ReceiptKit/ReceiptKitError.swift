/// The one error ReceiptKit throws: a stable machine-readable ``code`` and a human ``reason``.
///
/// Two errors are equal when their codes are equal, so a test or a `switch` can match on the
/// code while the reason names the failed check and the certificate or field involved.
public struct ReceiptKitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable snake_case error code: the same string `verify-receipt` prints.
    ///
    /// Only ReceiptKit makes codes: the static members below are all there are, so a `switch`
    /// over them needs a `default` and a new code breaks no caller.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The snake_case string, e.g. `invalid_signature`.
        public let rawValue: String

        init(rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// The input is larger than the configured limit for its kind.
        public static let inputTooLarge = Code(rawValue: "input_too_large")
        /// The input is not a JWS in compact serialization with canonical base64url segments.
        public static let malformedJWS = Code(rawValue: "malformed_jws")
        /// The JWS header is not a JSON object, has duplicate members, or has a `crit` member.
        public static let malformedHeader = Code(rawValue: "malformed_header")
        /// The header's `alg` is missing or is not exactly `ES256`.
        public static let unsupportedAlgorithm = Code(rawValue: "unsupported_algorithm")
        /// The header has no `x5c`, or an empty one.
        public static let missingCertificateChain = Code(rawValue: "missing_certificate_chain")
        /// An `x5c` entry is not standard base64 or not a DER certificate.
        public static let malformedCertificate = Code(rawValue: "malformed_certificate")
        /// The payload is not a JSON object, or a member Apple defines has the wrong JSON type.
        public static let malformedPayload = Code(rawValue: "malformed_payload")
        /// The signature is malformed, out of range, or does not verify under the leaf key.
        public static let invalidSignature = Code(rawValue: "invalid_signature")
        /// The `x5c` chain does not hold exactly three certificates.
        public static let invalidChainLength = Code(rawValue: "invalid_chain_length")
        /// The chain is structurally wrong: a certificate's role, key, or signature does not fit.
        public static let invalidChain = Code(rawValue: "invalid_chain")
        /// The chain does not end in a trusted anchor (a pinned or supplied root).
        public static let untrustedRoot = Code(rawValue: "untrusted_root")
        /// A certificate of the chain had expired at the validation time.
        public static let certificateExpired = Code(rawValue: "certificate_expired")
        /// A certificate of the chain was not yet valid at the validation time.
        public static let certificateNotYetValid = Code(rawValue: "certificate_not_yet_valid")
        /// The leaf or intermediate lacks Apple's marker extension.
        public static let missingAppleExtension = Code(rawValue: "missing_apple_extension")
        /// The payload's bundle identifier is not the configured one.
        public static let bundleIDMismatch = Code(rawValue: "bundle_id_mismatch")
        /// The payload's App Apple ID is not the configured one.
        public static let appAppleIDMismatch = Code(rawValue: "app_apple_id_mismatch")
        /// The payload's environment is not the configured one.
        public static let environmentMismatch = Code(rawValue: "environment_mismatch")
        /// The input is not any format ReceiptKit reads.
        public static let unrecognizedInput = Code(rawValue: "unrecognized_input")
        /// A legacy receipt's envelope is not exactly what Apple writes, or its payload lacks a
        /// required attribute or has one of the wrong type.
        public static let malformedReceipt = Code(rawValue: "malformed_receipt")
        /// A certificate of the chain is revoked (OCSP or CRL); the reason names it, the revocation
        /// time and reason, and whether it came before the payload's signed date.
        public static let certificateRevoked = Code(rawValue: "certificate_revoked")
        /// A revocation policy that needs a status (`ocsp-strict`, `offline`) got none for a
        /// certificate; the reason names it and why.
        public static let revocationUnknown = Code(rawValue: "revocation_unknown")
        /// A legacy receipt's device hash (attribute 5) does not match the configured device.
        public static let deviceHashMismatch = Code(rawValue: "device_hash_mismatch")
        /// A stored ``EntitlementLedger`` does not decode: it is not a strict JSON object, a member
        /// is missing or has the wrong JSON type, or its format version is one this ReceiptKit
        /// does not read. Not a check of App Store data: `verify-receipt` never prints it.
        public static let malformedLedger = Code(rawValue: "malformed_ledger")
        /// An entitlements file (``EntitlementCatalog``) is not JSON, has a member it does not
        /// define, or says something it cannot mean; the reason names the line and the member.
        public static let invalidEntitlements = Code(rawValue: "invalid_entitlements")
        /// An ISO 8601 duration (``EntitlementDuration``) is not one ReceiptKit reads.
        public static let invalidDuration = Code(rawValue: "invalid_duration")
        /// A signing key is not an unencrypted PEM private key on P-256 (App Store Connect's `.p8`).
        /// Not a check of App Store data: the signers and the App Store Server API client throw it.
        public static let invalidPrivateKey = Code(rawValue: "invalid_private_key")
        /// A public key given to check an ES256 signature is not a P-256 `SubjectPublicKeyInfo`.
        public static let invalidPublicKey = Code(rawValue: "invalid_public_key")
        /// OpenSSL failed to make a signature (the reason carries its error text).
        public static let signingFailed = Code(rawValue: "signing_failed")
        /// What a signer was asked to sign is not what Apple's format allows: an empty identifier,
        /// an app account token or nonce that is not a UUID, a request that is not a JSON object.
        public static let invalidSigningInput = Code(rawValue: "invalid_signing_input")
    }

    /// The stable code of the failed check.
    public let code: Code
    /// What failed, naming the check and the field or certificate involved.
    public let reason: String
    /// OpenSSL's own error text for the failure, when OpenSSL reported one.
    public let underlyingError: String?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The stable code.
    ///   - reason: The human-readable reason.
    ///   - underlyingError: OpenSSL's error text, if any.
    public init(_ code: Code, _ reason: String, underlyingError: String? = nil) {
        self.code = code
        self.reason = reason
        self.underlyingError = underlyingError
    }

    /// The reason, followed by OpenSSL's text when there is one.
    public var message: String {
        guard let underlyingError, !underlyingError.isEmpty else { return reason }
        return "\(reason) (OpenSSL: \(underlyingError))"
    }

    public var description: String { "\(code.rawValue): \(message)" }

    public static func == (lhs: ReceiptKitError, rhs: ReceiptKitError) -> Bool {
        lhs.code == rhs.code
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
    }
}
