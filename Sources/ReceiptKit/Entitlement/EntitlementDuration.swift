/// A length of time as ISO 8601 writes it (`P30D`, `P1M`, `P1Y`, `P1W`, `PT12H`, `P1Y2M3DT4H5M6S`):
/// how long a non-renewing subscription lasts in an entitlements file, and how long a grant lasts.
///
/// Years and months are calendar units, added in UTC: one month after 31 January is the last day
/// of February, one year after 29 February 2024 is 28 February 2025. Weeks are 7 days and days are
/// 24 hours (UTC has no daylight saving). Each part is a whole number; at least one part is given
/// and the length is not zero. Fractions, negative durations and the alternative format
/// (`P0001-02-03`) are refused.
public struct EntitlementDuration: Sendable, Hashable, CustomStringConvertible {
    /// Calendar months (a year is 12).
    public let months: Int64
    /// Days (a week is 7).
    public let days: Int64
    /// Seconds (an hour is 3,600, a minute 60).
    public let seconds: Int64
    /// The text it was read from.
    public let description: String

    /// The longest duration read: 1,000 years, so that adding it to any date Apple signs stays far
    /// inside ``Timestamp``'s range.
    static let maximumMonths: Int64 = 12_000

    /// Reads an ISO 8601 duration.
    ///
    /// - Parameter text: The duration, e.g. `P30D`.
    /// - Throws: ``ReceiptKitError`` with code ``ReceiptKitError/Code/invalidDuration`` naming what
    ///   is wrong.
    public init(iso8601 text: String) throws(ReceiptKitError) {
        func invalid(_ why: String) -> ReceiptKitError {
            ReceiptKitError(.invalidDuration, "\"\(text)\" is not an ISO 8601 duration such as P30D, P1M or PT12H: \(why)")
        }
        var bytes = text.utf8[...]
        guard bytes.first == UInt8(ascii: "P") else { throw invalid("it does not start with P") }
        bytes = bytes.dropFirst()
        var months: Int64 = 0, days: Int64 = 0, seconds: Int64 = 0
        var inTime = false
        var designators: [UInt8] = []
        var sawPart = false
        while let first = bytes.first {
            if first == UInt8(ascii: "T") {
                guard !inTime else { throw invalid("T appears twice") }
                inTime = true
                bytes = bytes.dropFirst()
                guard !bytes.isEmpty else { throw invalid("nothing follows T") }
                continue
            }
            let digits = bytes.prefix(while: { $0 >= 0x30 && $0 <= 0x39 })
            guard !digits.isEmpty else { throw invalid("a number must come before each of Y, M, W, D, H, M and S") }
            guard digits.count <= 9 else { throw invalid("a number is too large") }
            let value = digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
            bytes = bytes.dropFirst(digits.count)
            guard let designator = bytes.first else { throw invalid("\(value) has no unit (Y, M, W, D, H, M or S)") }
            bytes = bytes.dropFirst()
            let order: [UInt8] = inTime ? Array("HMS".utf8) : Array("YMWD".utf8)
            guard let rank = order.firstIndex(of: designator) else {
                throw invalid("\(Character(Unicode.Scalar(designator))) is not a unit\(inTime ? " after T (H, M or S)" : " before T (Y, M, W or D)")")
            }
            let tagged = UInt8(rank) + (inTime ? 10 : 0)
            guard designators.last.map({ $0 < tagged }) ?? true else { throw invalid("its parts are repeated or out of order") }
            designators.append(tagged)
            sawPart = true
            switch (inTime, designator) {
            case (false, UInt8(ascii: "Y")): months += value * 12
            case (false, UInt8(ascii: "M")): months += value
            case (false, UInt8(ascii: "W")): days += value * 7
            case (false, _): days += value
            case (true, UInt8(ascii: "H")): seconds += value * 3600
            case (true, UInt8(ascii: "M")): seconds += value * 60
            case (true, _): seconds += value
            }
        }
        guard sawPart else { throw invalid("it has no part") }
        guard months > 0 || days > 0 || seconds > 0 else { throw invalid("it is zero") }
        guard months <= Self.maximumMonths, days <= Self.maximumMonths * 31, seconds <= Self.maximumMonths * 31 * 86_400 else {
            throw invalid("it is longer than 1,000 years")
        }
        self.months = months
        self.days = days
        self.seconds = seconds
        description = text
    }

    /// The instant this long after `start`: its months added on the calendar (the day of the month
    /// kept, or the month's last day when it has fewer), then its days and seconds.
    ///
    /// - Parameter start: The instant to count from.
    /// - Returns: The instant the duration ends.
    public func added(to start: Timestamp) -> Timestamp {
        let milliseconds = start.millisecondsSince1970
        let dayMilliseconds: Int64 = 86_400_000
        var day = milliseconds / dayMilliseconds
        var timeOfDay = milliseconds % dayMilliseconds
        if timeOfDay < 0 {
            day -= 1
            timeOfDay += dayMilliseconds
        }
        if months > 0 {
            let civil = CivilCalendar.date(fromDaysSince1970: day)
            let monthIndex = civil.year * 12 + (civil.month - 1) + months
            let year = monthIndex / 12
            let month = monthIndex % 12 + 1
            day = CivilCalendar.daysSince1970(year: year, month: month, day: min(civil.day, CivilCalendar.daysIn(month: month, year: year)))
        }
        day += days
        return Timestamp(millisecondsSince1970: day * dayMilliseconds + timeOfDay + seconds * 1000)
    }
}
