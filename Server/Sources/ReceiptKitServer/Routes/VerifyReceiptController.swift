import Foundation
import Hummingbird
import ReceiptKit
import ReceiptKitFormats

/// `POST /verifyReceipt`: a drop-in for Apple's deprecated endpoint. Takes
/// `{"receipt-data": base64, "password"?, "exclude-old-transactions"?}` (the password is
/// ignored: nothing is asked of Apple) and answers, always with
/// HTTP 200 as Apple did, Apple's body: `status` 0 with `environment` and `receipt` (ReceiptKit's
/// verifyReceipt rendering), or Apple's numeric status (21002 malformed, 21003 not
/// authenticated, 21007/21008 wrong environment) with the error. A verified receipt is stored
/// like any purchase, and the answer adds `latest_receipt_info` and `pending_renewal_info` in
/// Apple's shape, from every event the service has stored for the receipt's subscriptions
/// (``VerifyReceiptHistory``): renewals that arrived by notification after the receipt was
/// issued are listed too.
struct VerifyReceiptController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.post, "verifyReceipt", scope: .write) { request, context in
            try await verifyReceipt(request, context: context)
        }
    }

    func verifyReceipt(_ request: Request, context: ServerRequestContext) async throws -> Response {
        // 21007 (a test receipt sent to production) when Production is served, 21008 otherwise,
        // for a receipt of an environment not served; any served environment's receipt is 0.
        let served = environment.verifier.configuration.environments
        let expected: AppStoreEnvironment? = served.contains(.production) ? .production : served.first
        let body: [UInt8]
        do {
            body = try await environment.body(of: request, upTo: environment.receiptBodyLimit)
        } catch let error as BodyTooLarge {
            let outcome = VerificationOutcome.rejected(ReceiptKitError(.inputTooLarge, error.message))
            context.notes.update { $0.verdict = "input_too_large" }
            return .json(outcome.verifyReceiptJSON(expectedEnvironment: expected, requestDate: environment.now))
        }
        // Apple's answer to a body it cannot read: 200 with status 21002, the reason naming the
        // member at fault (a duplicate one included, as for every body the server reads).
        let fields: VerifyReceiptRequest
        do {
            fields = try RequestBody.decode(VerifyReceiptRequest.self, from: body)
        } catch {
            let outcome = VerificationOutcome.rejected(ReceiptKitError(
                .unrecognizedInput, "the body must be a JSON object with a receipt-data string: \(error.message)"))
            context.notes.update { $0.verdict = "unrecognized_input" }
            return .json(outcome.verifyReceiptJSON(expectedEnvironment: expected, requestDate: environment.now))
        }
        let excludeOldTransactions = fields.excludeOldTransactions ?? false
        let now = environment.now
        let outcome = environment.verifier.verify(input: body, as: .receipt)
        let rendered = outcome.verifyReceiptJSON(expectedEnvironment: expected, requestDate: now)
        guard case .verified(let record) = outcome, outcome.verifyReceiptStatus(expectedEnvironment: expected) == 0 else {
            if case .rejected(let error) = outcome {
                environment.metrics.verification(result: error.code.rawValue)
                context.notes.update { $0.verdict = error.code.rawValue; $0.reason = error.message }
            }
            return .json(rendered)
        }
        environment.metrics.verification(
            result: "verified", bundleId: environment.ingestion.bundleId(of: record), environment: record.environment ?? "-")
        let recorded = try await environment.ingestion.record(record, raw: body, customerId: nil, receivedAt: now, source: .app)
        RouteEnvironment.accepted(recorded, context: context)

        let keys = recorded.input.keys
        let store = environment.store
        let inputs = try await environment.read { try await store.inputs(touching: keys) }
        let (latest, pending) = try VerifyReceiptHistory.render(
            inputs: inputs, keys: Set(keys), excludeOldTransactions: excludeOldTransactions)
        var json = JSONObjectText(extending: rendered)
        json.member("latest_receipt_info", json: latest)
        json.member("pending_renewal_info", json: pending)
        return .json(json.text)
    }
}

/// The body of `POST /verifyReceipt`, as Apple's endpoint took it (`receipt-data` is read again
/// by the verifier, which takes the body whole).
struct VerifyReceiptRequest: Decodable, RequestFields {
    var receiptData: String?
    /// The app's shared secret: accepted and ignored (nothing is asked of Apple).
    var password: String?
    var excludeOldTransactions: Bool?

    typealias Fields = CodingKeys
    static var nullable: Set<String> { Set(CodingKeys.allCases.map(\.stringValue)) }
    static var othersIgnored: Bool { true }
    enum CodingKeys: String, CodingKey, CaseIterable {
        case receiptData = "receipt-data"
        case password
        case excludeOldTransactions = "exclude-old-transactions"
    }
}
