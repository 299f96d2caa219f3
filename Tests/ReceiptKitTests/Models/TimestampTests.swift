import Foundation
import ReceiptKit
import Testing

@Suite("Timestamp")
struct TimestampTests {
    @Test("ISO 8601 rendering in UTC with milliseconds", arguments: [
        (Int64(1_739_161_772_561), "2025-02-10T04:29:32.561Z"),
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (-62_135_769_600_000, "0000-12-30T00:00:00.000Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
    ])
    func rendering(_ milliseconds: Int64, _ text: String) {
        #expect(Timestamp(millisecondsSince1970: milliseconds).iso8601 == text)
    }

    @Test("RFC 3339 parsing as receipts and --at write it", arguments: [
        ("2025-01-01T00:00:00Z", Int64(1_735_689_600_000)),
        ("2020-07-22T18:33:15+0100", 1_595_439_195_000),
        ("2020-07-22T18:33:15+01:00", 1_595_439_195_000),
        ("2020-10-16T14:29:30+0300", 1_602_847_770_000),
        ("2025-02-10T04:29:32.561Z", 1_739_161_772_561),
        ("2025-02-10T04:29:32.5619Z", 1_739_161_772_561),
        ("2025-02-10T04:29:32.5Z", 1_739_161_772_500),
    ])
    func parsing(_ text: String, _ milliseconds: Int64) {
        #expect(Timestamp(rfc3339: text)?.millisecondsSince1970 == milliseconds)
    }

    @Test("malformed timestamps are refused", arguments: [
        "", "2025-01-01", "2025-01-01T00:00:00", "2025-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
        "2025-01-01T24:00:00Z", "2025-01-01T00:00:00.Z", "2025-01-01T00:00:00Zx", "2025-01-01T00:00:00+1",
        "２０２５-01-01T00:00:00Z",
    ])
    func malformed(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test("Date conversion floors to the millisecond")
    func date() {
        #expect(Timestamp(Date(timeIntervalSince1970: 1.2349)).millisecondsSince1970 == 1234)
        #expect(Timestamp(millisecondsSince1970: 1500).date == Date(timeIntervalSince1970: 1.5))
    }
}
