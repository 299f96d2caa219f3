import struct Foundation.Date

/// The instant at which a certificate chain is validated.
///
/// App Store leaf certificates live about two years, so archived data verifies only at the time
/// it was signed: ``signedDate`` is the default. Validating at the signed date proves that a key
/// certified by Apple signed the data and that its chain was valid at the date the signer wrote;
/// it cannot prove the date itself, so a leaf key that leaked after it expired could back-date.
public enum ValidationTime: Sendable, Hashable {
    /// The payload's own date: `signedDate` (an AppTransaction's `receiptCreationDate`, a
    /// receipt's creation date); the verifier's clock when the payload has none.
    case signedDate
    /// The verifier's clock at the moment of verification.
    case now
    /// A fixed instant.
    case fixed(Timestamp)

    /// Resolves the instant for a payload.
    ///
    /// - Parameters:
    ///   - payloadDate: The payload's own date, if it has one.
    ///   - clock: Reads the current time; called only when needed.
    func resolve(payloadDate: Timestamp?, clock: () -> Date) -> Timestamp {
        switch self {
        case .signedDate: payloadDate ?? Timestamp(clock())
        case .now: Timestamp(clock())
        case .fixed(let instant): instant
        }
    }
}
