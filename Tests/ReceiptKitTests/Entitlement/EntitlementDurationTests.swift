import Foundation
import ReceiptKit
import Testing

/// ``EntitlementDuration``: the ISO 8601 durations an entitlements file gives a non-renewing
/// subscription, read and added on the UTC calendar; every text it must refuse refused as
/// `invalid_duration`.
@Suite("EntitlementDuration")
struct EntitlementDurationTests {
    static func instant(_ text: String) throws -> Timestamp {
        try #require(Timestamp(rfc3339: text), "\(text) is not an instant")
    }

    /// A duration's text, its parts, and the instant it ends after a start.
    struct Reading: CustomTestStringConvertible, Sendable {
        let text: String
        let months: Int64
        let days: Int64
        let seconds: Int64
        let start: String
        let end: String

        init(_ text: String, months: Int64 = 0, days: Int64 = 0, seconds: Int64 = 0, from start: String, to end: String) {
            self.text = text
            self.months = months
            self.days = days
            self.seconds = seconds
            self.start = start
            self.end = end
        }

        var testDescription: String { "\(start) + \(text)" }
    }

    static let readings: [Reading] = [
        Reading("P30D", days: 30, from: "2025-06-01T00:00:00Z", to: "2025-07-01T00:00:00Z"),
        Reading("P1M", months: 1, from: "2025-06-15T08:00:00Z", to: "2025-07-15T08:00:00Z"),
        // The day of the month is kept, or the month's last day when it has fewer.
        Reading("P1M", months: 1, from: "2025-01-31T10:30:00Z", to: "2025-02-28T10:30:00Z"),
        Reading("P1M", months: 1, from: "2024-01-31T10:30:00Z", to: "2024-02-29T10:30:00Z"),
        Reading("P1M", months: 1, from: "2025-03-31T00:00:00Z", to: "2025-04-30T00:00:00Z"),
        Reading("P1M", months: 1, from: "2025-12-31T23:59:59Z", to: "2026-01-31T23:59:59Z"),
        Reading("P1Y", months: 12, from: "2024-02-29T12:00:00Z", to: "2025-02-28T12:00:00Z"),
        Reading("P4Y", months: 48, from: "2024-02-29T12:00:00Z", to: "2028-02-29T12:00:00Z"),
        // Hours carry into the next day.
        Reading("PT12H", seconds: 43_200, from: "2025-06-01T18:00:00Z", to: "2025-06-02T06:00:00Z"),
        Reading("P1W", days: 7, from: "2025-06-28T00:00:00Z", to: "2025-07-05T00:00:00Z"),
        // 14 months from 31 January 2024 is 31 March 2025; then 3 days and 4:05:06.
        Reading("P1Y2M3DT4H5M6S", months: 14, days: 3, seconds: 4 * 3600 + 5 * 60 + 6, from: "2024-01-31T00:00:00Z",
                to: "2025-04-03T04:05:06Z"),
        // Before 1970 the time of day is kept as well.
        Reading("P1M", months: 1, from: "1969-12-31T12:00:00Z", to: "1970-01-31T12:00:00Z"),
    ]

    @Test("a duration's parts, and the instant it ends after a start", arguments: readings)
    func read(_ reading: Reading) throws {
        let duration = try EntitlementDuration(iso8601: reading.text)
        #expect(duration.months == reading.months)
        #expect(duration.days == reading.days)
        #expect(duration.seconds == reading.seconds)
        #expect(duration.description == reading.text)
        #expect(duration.added(to: try Self.instant(reading.start)) == (try Self.instant(reading.end)))
    }

    @Test("two texts for the same length are equal only when written alike")
    func equality() throws {
        #expect(try EntitlementDuration(iso8601: "P1W") != EntitlementDuration(iso8601: "P7D"))
        #expect(try EntitlementDuration(iso8601: "P7D") == EntitlementDuration(iso8601: "P7D"))
    }

    @Test("texts that are not a duration ReceiptKit reads are invalid_duration, with the text and the reason", arguments: [
        ("", "does not start with P"),
        ("P", "has no part"),
        ("PT", "nothing follows T"),
        ("P1", "has no unit"),
        ("P1.5D", "is not a unit"),
        ("-P1D", "does not start with P"),
        ("P1D1Y", "out of order"),
        ("P0D", "is zero"),
        ("1D", "does not start with P"),
        ("P1H", "H is not a unit before T"),
        ("P1DT", "nothing follows T"),
        ("PT1D", "D is not a unit after T"),
        ("P1M1M", "repeated or out of order"),
        ("P1234567890D", "too large"),
        ("P1001Y", "longer than 1,000 years"),
    ])
    func refused(text: String, why: String) throws {
        let error = expectRejection(.invalidDuration) { _ = try EntitlementDuration(iso8601: text) }
        #expect(error?.reason.hasPrefix("\"\(text)\" is not an ISO 8601 duration") == true, "\(error?.reason ?? "")")
        #expect(error?.reason.contains(why) == true, "\(text): \(error?.reason ?? "")")
    }
}
