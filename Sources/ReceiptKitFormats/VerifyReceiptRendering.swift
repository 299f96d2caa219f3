import struct Foundation.Date
import struct Foundation.TimeZone
public import ReceiptKit

// The response body Apple's verifyReceipt endpoint gave for a receipt, rendered locally, so a
// backend built on that endpoint can switch to an offline check without changing its parser.

extension VerificationOutcome {
    /// The verifyReceipt `status` of the outcome: 0 for a verified receipt, otherwise Apple's code
    /// where one fits.
    ///
    /// - 21002 (the receipt data was malformed): `malformed_receipt`, `unrecognized_input`,
    ///   `input_too_large`, any other `malformed_*`, and a verified input that is not a receipt
    ///   (verifyReceipt knows only receipts).
    /// - 21007 (a test receipt sent to production) / 21008 (a production receipt sent to test):
    ///   `environment_mismatch`, 21007 when the verifier expects Production, 21008 otherwise.
    /// - 21003 (the receipt could not be authenticated): every other rejection — signature, chain,
    ///   root, validity, marker extensions, device hash, bundle id and App Apple ID.
    ///
    /// - Parameter expectedEnvironment: The environment the verifier was configured to require.
    public func verifyReceiptStatus(expectedEnvironment: AppStoreEnvironment? = nil) -> Int {
        switch self {
        case .verified(let record):
            return record.kind == .receipt && record.receipt != nil ? 0 : 21002
        case .rejected(let error):
            switch error.code {
            case .malformedReceipt, .unrecognizedInput, .inputTooLarge, .malformedJWS, .malformedHeader,
                .malformedPayload, .malformedCertificate:
                return 21002
            case .environmentMismatch:
                return expectedEnvironment == .production ? 21007 : 21008
            default:
                return 21003
            }
        }
    }

    /// The outcome as verifyReceipt's response body.
    ///
    /// A verified receipt gives `{"status": 0, "environment": …, "receipt": {…}}` with the rules
    /// Apple's own responses follow: numbers inside `in_app` are strings, flags are `"true"` or
    /// `"false"`, every date comes as `X` (`yyyy-MM-dd HH:mm:ss Etc/GMT`), `X_ms` (a string) and
    /// `X_pst` (`America/Los_Angeles`), absent dates and a web order line item id of 0 are
    /// omitted, `is_trial_period` is always present, and `in_app` keeps the receipt's order (each
    /// element is a ``VerifyReceiptTransaction``).
    /// `latest_receipt_info`, `latest_receipt` and `pending_renewal_info` are not rendered: they
    /// come from Apple's servers, not from the receipt.
    ///
    /// Anything else gives `{"status": N, "error": {"code": …, "message": …}}` with
    /// ``verifyReceiptStatus(expectedEnvironment:)``.
    ///
    /// - Parameters:
    ///   - expectedEnvironment: The environment the verifier was configured to require.
    ///   - requestDate: The instant to render as `request_date`, or `nil` to omit it (it is
    ///     Apple's clock at the request, not part of the receipt).
    ///   - pretty: Whether to indent.
    ///   - id: For joinable batches, the caller's id, printed first as `id` (Apple's body has
    ///     no such member; parsers that ignore unknown members are unaffected).
    public func verifyReceiptJSON(
        expectedEnvironment: AppStoreEnvironment? = nil, requestDate: Timestamp? = nil, pretty: Bool = false,
        id: InputLabel? = nil
    ) -> String {
        let status = verifyReceiptStatus(expectedEnvironment: expectedEnvironment)
        var writer = JSONWriter(pretty: pretty)
        writer.object { json in
            if let id, id.hasID { json.member("id", id.id) }
            json.member("status", status)
            switch self {
            case .verified(let record):
                if status == 0, let receipt = record.receipt {
                    json.member("environment", record.environment)
                    json.member("receipt") { receipt.writeVerifyReceipt(to: &$0, requestDate: requestDate) }
                } else {
                    json.writeError(.unrecognizedInput,
                                    "the verifyReceipt rendering covers legacy receipts only; the input verified as \(record.kind.rawValue)")
                }
            case .rejected(let error):
                json.writeError(error.code, error.message)
            }
        }
        return writer.text
    }
}

extension AppReceipt {
    /// Writes verifyReceipt's `receipt` object.
    fileprivate func writeVerifyReceipt(to writer: inout JSONWriter, requestDate: Timestamp?) {
        writer.object { json in
            if let rawReceiptType { json.member("receipt_type", rawReceiptType) }
            if let appItemId {
                json.member("adam_id", appItemId)
                json.member("app_item_id", appItemId)
            }
            json.member("bundle_id", bundleId)
            json.member("application_version", applicationVersion)
            if let downloadId { json.member("download_id", downloadId) }
            if let versionExternalIdentifier { json.member("version_external_identifier", versionExternalIdentifier) }
            json.verifyReceiptDate("receipt_creation_date", receiptCreationDate)
            json.verifyReceiptDate("request_date", requestDate)
            json.verifyReceiptDate("original_purchase_date", originalPurchaseDate)
            if let originalApplicationVersion { json.member("original_application_version", originalApplicationVersion) }
            json.verifyReceiptDate("expiration_date", expirationDate)
            json.member("in_app") { json in
                json.array { json in
                    for purchase in inAppPurchases {
                        json.element { VerifyReceiptTransaction(purchase, of: self).write(to: &$0) }
                    }
                }
            }
        }
    }
}

extension JSONWriter {
    /// Writes verifyReceipt's three members for a date, `name`, `name_ms` and `name_pst`, or
    /// nothing when `date` is `nil`.
    mutating func verifyReceiptDate(_ name: String, _ date: Timestamp?) {
        guard let date else { return }
        member(JSONKey(name), PacificTime.format(date, offsetSeconds: 0) + " Etc/GMT")
        member(JSONKey(name + "_ms"), String(date.millisecondsSince1970))
        member(JSONKey(name + "_pst"),
               PacificTime.format(date, offsetSeconds: PacificTime.offsetSeconds(at: date)) + " America/Los_Angeles")
    }

    /// Writes `"error": {"code": …, "message": …}`.
    fileprivate mutating func writeError(_ code: ReceiptKitError.Code, _ message: String) {
        member("error") { json in
            json.object { json in
                json.member("code", code.rawValue)
                json.member("message", message)
            }
        }
    }
}

/// Local time in America/Los_Angeles, as verifyReceipt prints its `_pst` dates.
///
/// The offset (−8 h PST or −7 h PDT) comes from the time zone database through Foundation's
/// `TimeZone`, which knows every change of US daylight-saving law; the wall-clock text comes from
/// ``CivilCalendar`` (proleptic Gregorian, the same arithmetic as every other date ReceiptKit
/// prints), shifted by that offset.
enum PacificTime {
    private static let zone: TimeZone = {
        guard let zone = TimeZone(identifier: "America/Los_Angeles") else {
            preconditionFailure("the time zone database has no America/Los_Angeles")
        }
        return zone
    }()

    /// The offset from UTC in seconds at `instant`: −8 h (PST) or −7 h (PDT).
    static func offsetSeconds(at instant: Timestamp) -> Int64 {
        Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant.secondsSince1970))))
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }

    /// `yyyy-MM-dd HH:mm:ss` of `instant` shifted by `offsetSeconds`.
    static func format(_ instant: Timestamp, offsetSeconds: Int64) -> String {
        let seconds = instant.secondsSince1970 + offsetSeconds
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.date(fromDaysSince1970: days)
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(abs(value))
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2) + " "
            + padded(secondOfDay / 3600, 2) + ":" + padded(secondOfDay / 60 % 60, 2) + ":" + padded(secondOfDay % 60, 2)
    }
}
