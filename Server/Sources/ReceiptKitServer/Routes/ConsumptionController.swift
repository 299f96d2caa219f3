import Foundation
import Hummingbird
import ReceiptKit

/// Answering Apple's consumption requests (``ConsumptionRequests``):
///
/// - `PUT /v1/transactions/{transaction_id}/consumption`: the backend's answer to the latest
///   `CONSUMPTION_REQUEST` about the transaction, in Apple's v2 fields
///   (`{"customer_consented": true, "delivery_status", "refund_preference",
///   "consumption_percentage", "sample_content_provided"}`), validated as Apple validates it,
///   stored with its outbox row and sent to Send Consumption Information until the deadline:
///   200 `{"transaction_id", "deadline", "delivery"}` once committed. 400 `invalid_request` (a
///   field), 400 `customer_consent_required` (`customer_consented` is not true: Apple refuses
///   the data without it), 404 `consumption_request_not_found`, 409
///   `consumption_deadline_passed`, 501 `reconciliation_off` without an In-App Purchase key.
/// - `PUT /v1/customers/{customer_id}/consumption-consent`: `{"consented": true|false}`, whether
///   the customer agreed to share consumption data; `RECEIPTKIT_CONSUMPTION_DEFAULT` answers only
///   for customers who did. 200 `{"customer_id", "consented", "updated_at"}`.
struct ConsumptionController {
    let environment: RouteEnvironment

    private var consumptionRequests: ConsumptionRequests {
        ConsumptionRequests(store: environment.store, canSend: environment.apple != nil)
    }

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.put("transactions/{transaction_id}/consumption") { request, context in
            try await answer(request, context: context)
        }
        group.put("customers/{customer_id}/consumption-consent") { request, context in
            let customerId = try RouteEnvironment.pathParameter("customer_id", in: context)
            guard !customerId.isEmpty, customerId.utf8.count <= 256 else {
                throw APIError.invalidRequest("customer_id must be a non-empty string of at most 256 bytes")
            }
            struct Consent: Decodable { var consented: Bool }
            let body = try await environment.body(of: request, upTo: 4096)
            let consent = try RequestBody.decode(Consent.self, from: body)
            let now = environment.now
            let requests = consumptionRequests
            try await environment.read {
                try await requests.setConsent(customerId: customerId, consented: consent.consented, at: now.millisecondsSince1970)
            }
            var json = JSONObjectText()
            json.member("customer_id", customerId)
            json.member("consented", consent.consented)
            json.member("updated_at", now.iso8601)
            return Response.json(json.text)
        }
    }

    func answer(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let transactionId = try RouteEnvironment.pathParameter("transaction_id", in: context)
        try AppleSync.checkTransactionId(transactionId)
        let body = try await environment.body(of: request, upTo: 4096)
        let answer = try RequestBody.decode(ConsumptionAnswer.self, from: body)
        let requests = consumptionRequests
        let now = environment.now.millisecondsSince1970
        let (deadline, delivery) = try await environment.read {
            try await requests.answer(answer, transactionId: transactionId, now: now)
        }
        var json = JSONObjectText()
        json.member("transaction_id", transactionId)
        json.member("deadline", Timestamp(millisecondsSince1970: deadline).iso8601)
        json.member("delivery", json: delivery?.json ?? "null")
        return Response.json(json.text)
    }
}
