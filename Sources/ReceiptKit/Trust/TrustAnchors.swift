/// The roots ReceiptKit trusts: pinned SHA-256 fingerprints, root certificates, or both.
///
/// - A **pin** is matched against the root certificate the signed data carries (a JWS's
///   `x5c[2]`, a receipt's embedded root): that certificate becomes the anchor only if the SHA-256
///   of its DER is pinned.
/// - A **root certificate** is an anchor in its own right: the chain is built from the leaf and
///   intermediate up to it, and a root the data carries is ignored (JWS) or must be
///   byte-identical to it (receipts).
///
/// The default, ``apple``, pins Apple's two roots and ships no certificate file.
public struct TrustAnchors: Sendable {
    /// SHA-256 of Apple Root CA - G3 (EC P-384): the root of every App Store JWS.
    public static let appleRootCAG3SHA256 = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"
    /// SHA-256 of Apple Root CA (Apple Inc., RSA 2048): the root of every legacy App Store receipt.
    public static let appleIncRootCASHA256 = "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024"

    /// Pins for JWS chains.
    let jwsPins: Set<[UInt8]>
    /// Pins for legacy receipt chains.
    let receiptPins: Set<[UInt8]>
    /// Root certificates supplied by the user, anchors for every format.
    let roots: [Certificate]

    /// Apple's production trust: Apple Root CA - G3 pinned for JWS, Apple Root CA (Apple Inc.)
    /// pinned for legacy receipts, each used only for its own format.
    public static let apple = TrustAnchors(
        jwsPins: [Hex.decode(appleRootCAG3SHA256) ?? []],
        receiptPins: [Hex.decode(appleIncRootCASHA256) ?? []],
        roots: [])

    private init(jwsPins: Set<[UInt8]>, receiptPins: Set<[UInt8]>, roots: [Certificate]) {
        self.jwsPins = jwsPins
        self.receiptPins = receiptPins
        self.roots = roots
    }

    /// Creates anchors from root certificates and pinned fingerprints, replacing Apple's pins.
    ///
    /// - Parameters:
    ///   - rootCertificates: Root certificates, each DER or PEM.
    ///   - pinnedSHA256: SHA-256 fingerprints of root certificates' DER, as hexadecimal (colons
    ///     allowed, either case).
    /// - Throws: ``ReceiptKitError/Code/malformedCertificate`` for a certificate that does not
    ///   parse, or ``ReceiptKitError/Code/unrecognizedInput`` for a pin that is not 32 bytes of hex.
    public init(rootCertificates: [[UInt8]] = [], pinnedSHA256: [String] = []) throws {
        let roots = try rootCertificates.enumerated().map { index, bytes in
            do {
                return try Certificate(derOrPEM: bytes)
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "root certificate \(index + 1): \(error.reason)",
                                      underlyingError: error.underlyingError)
            }
        }
        let pins = try pinnedSHA256.map { text in
            let hex = String(text.filter { $0 != ":" })
            guard let bytes = Hex.decode(hex), bytes.count == 32 else {
                throw ReceiptKitError(.unrecognizedInput, "pin \"\(text)\" is not a SHA-256 fingerprint (64 hex digits)")
            }
            return bytes
        }
        self.init(jwsPins: Set(pins), receiptPins: Set(pins), roots: roots)
    }

    /// The SHA-256 fingerprints of the supplied root certificates, hexadecimal.
    public var rootCertificateFingerprints: [String] {
        roots.map { Hex.encode($0.sha256) }
    }
}
