public import struct Foundation.Date

/// An instant as Apple writes it: milliseconds since 1970-01-01T00:00:00Z.
///
/// Apple's JWS payloads carry whole milliseconds; Xcode's carry fractional ones
/// (`1697679936049.7297`), which are floored to the millisecond. ReceiptKit prints every
/// timestamp as ISO 8601 UTC with milliseconds, e.g. `2025-02-10T04:29:32.561Z`.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Whole milliseconds since 1970-01-01T00:00:00Z (negative before it).
    public let millisecondsSince1970: Int64

    /// The largest magnitude accepted: ECMAScript's ±8.64e15 ms (about ±275,000 years).
    static let limit: Int64 = 8_640_000_000_000_000

    /// Creates a timestamp from whole milliseconds since 1970.
    ///
    /// - Parameter millisecondsSince1970: Milliseconds since 1970-01-01T00:00:00Z.
    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    /// Creates a timestamp from a `Date`, floored to the millisecond.
    ///
    /// - Parameter date: The instant.
    public init(_ date: Date) {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        self.millisecondsSince1970 = Int64(
            max(Double(-Self.limit), min(Double(Self.limit), milliseconds)))
    }

    /// Creates a timestamp from a possibly fractional millisecond count, or `nil` when it is not
    /// finite or beyond ±8.64e15 ms.
    init?(fractionalMilliseconds value: Double) {
        guard value.isFinite, abs(value) <= Double(Self.limit) else { return nil }
        self.millisecondsSince1970 = Int64(value.rounded(.down))
    }

    /// The instant as a `Date`.
    public var date: Date {
        Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000)
    }

    /// Seconds since 1970, floored: the resolution X.509 validity has.
    public var secondsSince1970: Int64 {
        millisecondsSince1970 >= 0
            ? millisecondsSince1970 / 1000
            : -((-millisecondsSince1970 + 999) / 1000)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    /// ISO 8601 in UTC with milliseconds, e.g. `2025-02-10T04:29:32.561Z`.
    public var iso8601: String {
        withISO8601 { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with ``iso8601`` as UTF-8, formatted on the stack: the output hot path.
    func withISO8601<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        var days = millisecondsSince1970 / 86_400_000
        var msOfDay = millisecondsSince1970 % 86_400_000
        if msOfDay < 0 {
            msOfDay += 86_400_000
            days -= 1
        }
        let (year, month, day) = CivilCalendar.date(fromDaysSince1970: days)
        // At most 27 bytes ("+yyyyyy-MM-ddTHH:mm:ss.SSSZ").
        var text: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &text) { buffer in
            var count = 0
            func put(_ byte: UInt8) {
                buffer[count] = byte
                count += 1
            }
            func digits(_ value: Int64, _ width: Int) {
                var rest = value
                for position in stride(from: count + width - 1, through: count, by: -1) {
                    buffer[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                count += width
            }
            if year < 0 || year > 9999 {
                put(year < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
                digits(abs(year), 6)
            } else {
                digits(year, 4)
            }
            put(UInt8(ascii: "-"))
            digits(month, 2)
            put(UInt8(ascii: "-"))
            digits(day, 2)
            put(UInt8(ascii: "T"))
            digits(msOfDay / 3_600_000, 2)
            put(UInt8(ascii: ":"))
            digits(msOfDay / 60_000 % 60, 2)
            put(UInt8(ascii: ":"))
            digits(msOfDay / 1000 % 60, 2)
            put(UInt8(ascii: "."))
            digits(msOfDay % 1000, 3)
            put(UInt8(ascii: "Z"))
            return body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    public var description: String { iso8601 }

    /// Parses an RFC 3339 timestamp as receipts and `--at` write it: `YYYY-MM-DDTHH:MM:SS`, an
    /// optional fraction of a second, and `Z`, `+HH:MM` or `+HHMM` (receipts omit the colon).
    ///
    /// - Parameter text: The timestamp text.
    /// - Returns: The instant, or `nil` when `text` is not such a timestamp.
    public init?(rfc3339 text: String) {
        self.init(rfc3339Bytes: Array(text.utf8))
    }

    /// Parses RFC 3339 text given as UTF-8 bytes (see ``init(rfc3339:)``).
    ///
    /// One function on purpose: it reads the grammar left to right, field by field, with every
    /// range check beside the field it guards, on the hot path of every receipt date.
    init?<Bytes: RandomAccessCollection<UInt8>>(rfc3339Bytes bytes: Bytes) where Bytes.Index == Int {
        var index = bytes.startIndex
        func number(_ width: Int) -> Int64? {
            guard index + width <= bytes.endIndex else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + width] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            index += width
            return value
        }
        func expect(_ accepts: (UInt8) -> Bool) -> Bool {
            guard index < bytes.endIndex, accepts(bytes[index]) else { return false }
            index += 1
            return true
        }
        func isDash(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "-") }
        func isColon(_ byte: UInt8) -> Bool { byte == UInt8(ascii: ":") }
        func isSeparator(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "T") || byte == UInt8(ascii: "t") || byte == UInt8(ascii: " ")
        }
        guard let year = number(4), expect(isDash), let month = number(2), expect(isDash),
            let day = number(2), expect(isSeparator), let hour = number(2),
            expect(isColon), let minute = number(2), expect(isColon), let second = number(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= CivilCalendar.daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var milliseconds: Int64 = 0
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100
            let start = index
            while index < bytes.endIndex, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                milliseconds += Int64(bytes[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
            }
            guard index > start, index - start <= 9 else { return nil }
        }
        var offsetMinutes: Int64 = 0
        guard index < bytes.endIndex else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = bytes[index] == UInt8(ascii: "+") ? 1 : -1
            index += 1
            guard let offsetHours = number(2) else { return nil }
            _ = expect(isColon)
            guard let offsetMinutesPart = number(2), offsetHours < 24, offsetMinutesPart < 60 else {
                return nil
            }
            offsetMinutes = sign * (offsetHours * 60 + offsetMinutesPart)
        default:
            return nil
        }
        guard index == bytes.endIndex else { return nil }
        let days = CivilCalendar.daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        self.millisecondsSince1970 = seconds * 1000 + milliseconds
    }
}

/// Proleptic Gregorian calendar arithmetic (H. Hinnant's `days_from_civil` and inverse).
package enum CivilCalendar {
    package static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    package static func date(fromDaysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    package static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11:
            return 30
        default:
            return 31
        }
    }
}

extension Timestamp: Codable {
    /// Decodes whole milliseconds since 1970, as ``init(millisecondsSince1970:)``.
    public init(from decoder: any Decoder) throws {
        self.init(millisecondsSince1970: try decoder.singleValueContainer().decode(Int64.self))
    }

    /// Encodes ``millisecondsSince1970``, as Apple writes dates.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(millisecondsSince1970)
    }
}
