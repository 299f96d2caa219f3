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
        resolve(payloadDate: payloadDate, source: .payloadDate, clock: clock).time
    }

    /// Resolves the instant for a payload and says where it came from.
    ///
    /// - Parameters:
    ///   - payloadDate: The date the payload kind's rule gives, if any.
    ///   - source: Where `payloadDate` came from (``ValidationTimeSource/payloadDate`` or
    ///     ``ValidationTimeSource/nestedSignedDate``).
    ///   - clock: Reads the current time; called only when needed.
    func resolve(
        payloadDate: Timestamp?, source: ValidationTimeSource, clock: () -> Date
    ) -> (time: Timestamp, source: ValidationTimeSource) {
        switch self {
        case .signedDate:
            if let payloadDate { return (payloadDate, source) }
            return (Timestamp(clock()), .clock)
        case .now: return (Timestamp(clock()), .now)
        case .fixed(let instant): return (instant, .fixed)
        }
    }
}

/// Where the instant a chain was validated at came from.
///
/// With ``ValidationTime/signedDate`` (the default) every payload kind has its own date:
///
/// | payload | date |
/// |---|---|
/// | transaction, renewal info, realtime request, Xcode JWS | its `signedDate` |
/// | app transaction | its `receiptCreationDate`, else its `signedDate` |
/// | notification | its `signedDate`; without one (the early-2022 shape, `notificationVersion` "2.0"), the latest `signedDate` of the JWS nested in its `data` / `appData` |
/// | legacy receipt | its creation date (attribute 12) |
///
/// and only a payload with no such date is validated at the verifier's clock.
public enum ValidationTimeSource: String, Sendable, Hashable {
    /// The payload's own date, by its kind's rule (the usual case; not printed).
    case payloadDate = "payload_date"
    /// A notification without `signedDate`: the latest `signedDate` of the JWS nested in it,
    /// which its own signature covers.
    case nestedSignedDate = "nested_signed_date"
    /// ``ValidationTime/signedDate`` was asked for, but the payload carries no date: the clock.
    case clock
    /// ``ValidationTime/now``.
    case now
    /// ``ValidationTime/fixed(_:)``.
    case fixed

    /// Whether records print the source: only when ``ValidationTime/signedDate`` was asked for and
    /// the payload's own date was not what it got, so records of ordinary payloads are unchanged.
    var isPrinted: Bool { self == .nestedSignedDate || self == .clock }
}
