import AppStoreServerAPI
import Foundation
import Hummingbird
import ReceiptKit

/// `POST /v1/transactions`: the app's purchase, forwarded by the backend, as
/// `{"signed_transaction": JWS}`, `{"receipt_data": base64}` or — with the App Store Server API
/// configured — `{"transaction_id": "…"}` (any transaction id, original transaction id or app
/// transaction id of the customer: the customer's history and statuses are fetched from Apple,
/// see ``AppleSync``), with an optional `"customer_id"`. Verifies and stores it, links its original transaction ids to the customer
/// (or to the transaction's `appAccountToken` when no id is given), and answers
/// `{"customer_id", "duplicate", "record", "entitled", "subscriptions"}` with that customer's
/// entitlements now.
struct TransactionController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.post, "transactions", scope: .write) { request, context in
            try await transaction(request, context: context)
        }
    }

    func transaction(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let body = try await environment.body(of: request, upTo: environment.receiptBodyLimit)
        let fields = try RequestBody.decode(TransactionRequest.self, from: body)
        if let customerId = fields.customerId { _ = try RouteEnvironment.customerId(customerId, name: "customer_id") }
        if let transactionId = fields.transactionId {
            guard fields.signedTransaction == nil, fields.receiptData == nil else {
                throw APIError.invalidRequest("the body has transaction_id and signed_transaction or receipt_data; send one")
            }
            return try await purchase(
                transactionId: transactionId, customerId: fields.customerId, bundleId: fields.bundleId, environment: fields.environment,
                context: context)
        }
        guard fields.bundleId == nil, fields.environment == nil else {
            throw APIError.invalidRequest("bundle_id and environment go with transaction_id; a signed purchase names its own")
        }
        let purchase: Ingestion.Purchase
        switch (fields.signedTransaction, fields.receiptData) {
        case (.some, .some):
            throw APIError.invalidRequest("the body has both signed_transaction and receipt_data; send one")
        case (let jws?, nil):
            purchase = .signedTransaction(jws)
        case (nil, let base64?):
            purchase = .receipt(base64)
        case (nil, nil):
            throw APIError.invalidRequest("the body has none of signed_transaction, receipt_data and transaction_id")
        }
        let now = environment.now
        let (recorded, customer): (Ingestion.Recorded, String)
        do {
            (recorded, customer) = try await environment.ingestion.purchase(
                purchase, customerId: fields.customerId, receivedAt: now)
        } catch let rejected as Ingestion.Rejected {
            throw RouteEnvironment.refused(rejected, context: context)
        }
        RouteEnvironment.accepted(recorded, context: context)
        return try .json(PurchaseAnswer(
            entitlements: try await environment.entitlements(customerId: customer, at: environment.now), duplicate: !recorded.isNew,
            record: RenderedJSON(recorded.input.record)))
    }

    /// A purchase reported by its id: the customer's history (every page) and statuses, from
    /// Apple, verified, stored and linked; the answer as for a signed transaction, its `record`
    /// that of the transaction named (or, for an app transaction id, the last one Apple listed)
    /// and `duplicate` true when nothing Apple answered was new. Apple is asked for the app named
    /// (required when several are served) in the environment named, or in Production and then,
    /// when Production does not know the transaction, in Sandbox.
    func purchase(
        transactionId: String, customerId: String?, bundleId: String?, environment named: String?, context: ServerRequestContext
    ) async throws -> Response {
        guard let apple = environment.apple else { throw AppleFailure.notConfigured }
        let now = environment.now
        let purchase = try await apple.purchase(
            transactionId: transactionId, customerId: customerId, bundleId: bundleId, environment: named, receivedAt: now)
        context.notes.update { $0.verdict = "verified"; $0.duplicate = !purchase.isNew }
        return try .json(PurchaseAnswer(
            entitlements: try await environment.entitlements(customerId: purchase.customerId, at: now), duplicate: !purchase.isNew,
            record: purchase.record.map(RenderedJSON.init)))
    }
}

/// The body of `POST /v1/transactions`.
struct TransactionRequest: Decodable, RequestFields {
    /// The backend's customer id; `null` or absent links the purchase to its `appAccountToken`.
    var customerId: String?
    /// A StoreKit 2 transaction JWS.
    var signedTransaction: String?
    /// A legacy receipt in base64.
    var receiptData: String?
    /// A transaction id to fetch from Apple.
    var transactionId: String?
    /// With `transaction_id`: the app to ask Apple for (required when several are served).
    var bundleId: String?
    /// With `transaction_id`: the environment to ask Apple in (default: Production, then Sandbox).
    var environment: String?

    typealias Fields = CodingKeys
    static var nullable: Set<String> { ["customer_id"] }
    enum CodingKeys: String, CodingKey, CaseIterable {
        case customerId = "customer_id"
        case signedTransaction = "signed_transaction"
        case receiptData = "receipt_data"
        case transactionId = "transaction_id"
        case bundleId = "bundle_id"
        case environment
    }
}

/// The answer to a purchase: the customer's entitlements now, whether nothing was new, and the
/// record of the transaction named (left out when a purchase by id stored none of it).
struct PurchaseAnswer: Encodable {
    let entitlements: Entitlements
    let duplicate: Bool
    let record: RenderedJSON?

    private enum CodingKeys: String, CodingKey {
        case duplicate, record
    }

    func encode(to encoder: any Encoder) throws {
        try entitlements.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(duplicate, forKey: .duplicate)
        if let record { try container.encode(record, forKey: .record) }
    }
}
