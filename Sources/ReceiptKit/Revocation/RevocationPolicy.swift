/// Whether and how the certificates of a verified chain are checked for revocation.
///
/// Off by default: ReceiptKit then never touches the network. See `docs/revocation.md` for what
/// each mode does and when to use it.
public struct RevocationPolicy: Sendable {
    /// How revocation is checked.
    public enum Mode: String, Sendable, CaseIterable {
        /// No revocation check (the default).
        case off
        /// OCSP over the network; an answer that cannot be had is a warning on the record
        /// (`"revocation": "unknown"`), not a rejection.
        ///
        /// - Warning: Whoever can block the responder can hide a revocation in this mode; use
        ///   ``ocspStrict`` where that matters more than availability.
        case ocsp
        /// OCSP over the network; no usable answer rejects with `revocation_unknown`.
        case ocspStrict = "ocsp-strict"
        /// No network: answers come from the cache directory and CRLs; a certificate neither
        /// covers rejects with `revocation_unknown`.
        case offline
    }

    /// The mode.
    public var mode: Mode
    /// The longest one OCSP exchange may take, in seconds (rounded up to whole seconds).
    public var timeout: Double
    /// Where OCSP answers are kept between runs (one file per certificate), or `nil` for memory only.
    public var cacheDirectory: String?
    /// CRLs, consulted for any certificate whose issuer signed one.
    public var crls: [CRL]
    /// How long a failed OCSP exchange is remembered before the responder is asked again, in
    /// seconds: a batch from one leaf whose responder is down waits for one timeout, not one per input.
    public var retryInterval: Double

    /// The default timeout: 5 seconds.
    public static let defaultTimeout: Double = 5

    /// No revocation check.
    public static let off = RevocationPolicy(mode: .off)

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - mode: How revocation is checked.
    ///   - timeout: The longest one OCSP exchange may take, in seconds.
    ///   - cacheDirectory: Where OCSP answers are kept between runs, if anywhere.
    ///   - crls: CRLs.
    ///   - retryInterval: How long a failed OCSP exchange is remembered, in seconds.
    public init(
        mode: Mode, timeout: Double = defaultTimeout, cacheDirectory: String? = nil,
        crls: [CRL] = [], retryInterval: Double = 60
    ) {
        self.mode = mode
        self.timeout = timeout
        self.cacheDirectory = cacheDirectory
        self.crls = crls
        self.retryInterval = retryInterval
    }
}

extension RevocationPolicy {
    /// A certificate revocation list, parsed; its signature and freshness are checked when used.
    public struct CRL: Sendable {
        let list: CertificateRevocationList

        /// Parses a CRL file's contents.
        ///
        /// - Parameters:
        ///   - contents: DER, or PEM (`-----BEGIN X509 CRL-----`).
        ///   - name: What reasons call it (its file name).
        /// - Throws: ``ReceiptKitError/Code/unrecognizedInput`` when it is neither.
        public init(contents: [UInt8], name: String) throws {
            list = try CertificateRevocationList(derOrPEM: contents, name: name)
        }
    }
}

/// The revocation result a verified record carries when a policy other than ``RevocationPolicy/Mode/off``
/// is in force.
public struct RevocationResult: Sendable, Hashable {
    /// The outcome for the chain.
    public enum Status: String, Sendable {
        /// Every certificate checked is good.
        case good
        /// Some certificate's status could not be had (``RevocationPolicy/Mode/ocsp`` only).
        case unknown
        /// Nothing to check: Xcode's self-signed certificate, trusted as a root.
        case notApplicable = "not_applicable"
    }

    /// The outcome.
    public let status: Status
    /// Why the status is unknown, naming the certificate; `nil` otherwise.
    public let warning: String?

    /// The worse of two results: unknown over good over not applicable.
    func merged(with other: RevocationResult?) -> RevocationResult {
        guard let other else { return self }
        func rank(_ status: Status) -> Int {
            switch status {
            case .notApplicable: 0
            case .good: 1
            case .unknown: 2
            }
        }
        return rank(other.status) > rank(status) ? other : self
    }
}
