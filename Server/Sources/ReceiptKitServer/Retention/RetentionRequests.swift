import AppStoreServerAPI
import Hummingbird
import ReceiptKit

/// Apple's Get Retention Message requests answered (`POST /appstore/retention`): a verified
/// request's subscription read from stored state only (``RetentionReading``: nothing asks Apple on
/// this path, which Apple gives 700 ms), the operator's rules applied (``RetentionRules``), a
/// promotional offer signed on the spot with the In-App Purchase key, and the request with its
/// answer written to the feed as a `retention.requested` event (``RetentionRecording``), committed
/// before the answer is given.
struct RetentionRequests: Sendable {
    let rules: RetentionRules
    /// The In-App Purchase key, which signs promotional offers; `nil` when none is configured (no
    /// rule then answers with an offer: the rules file was refused at start).
    let key: InAppPurchaseKey?
    let store: Store

    /// A request answered.
    struct Answered: Sendable {
        /// Apple's `RealtimeResponseBody`.
        let body: RealtimeResponseBody
        /// The request and its answer, as the event has them.
        let notice: RetentionRequestNotice
        /// The event's id in the feed.
        let eventId: Int64
    }

    /// Answers a verified request and records it in the feed.
    ///
    /// - Parameters:
    ///   - request: The verified request.
    ///   - bundleId: The configured app its App Apple ID matched.
    ///   - receivedAt: When it arrived: the subscription's state is evaluated then, an offer signed
    ///     then.
    /// - Returns: The answer, once the event has committed.
    /// - Throws: ``IncompleteRealtimeRequest`` for a request without its original transaction
    ///   id, product or environment; ``StoreError`` when the database fails; ``ReceiptKitError`` when
    ///   signing fails.
    func answer(_ request: RealtimeRequest, bundleId: String, receivedAt: Timestamp) async throws -> Answered {
        let key = try Self.key(of: request, bundleId: bundleId)
        let productId = request.productId ?? ""
        let asked = RetentionFacts(productId: productId, locale: request.userLocale, state: nil)
        let facts = try await store.retentionFacts(of: key, at: receivedAt, request: asked, needs: rules.needs)
        let chosen = rules.rule(for: facts)
        var notice = RetentionRequestNotice(
            requestIdentifier: request.requestIdentifier, productId: productId, userLocale: request.userLocale,
            storefront: facts.storefront, signedDate: request.signedDate, rule: chosen?.position, answer: chosen?.rule.answer)
        var body = RealtimeResponseBody()
        switch chosen?.rule.answer {
        case .message(let message)?:
            body.message = .init(messageIdentifier: message.value)
        case .alternateProduct(let message, let alternate)?:
            body.alternateProduct = .init(messageIdentifier: message.value, productId: alternate)
        case .promotionalOffer(let message, let offerId, let offerProduct)?:
            guard let key = self.key else { throw StoreError("a promotional offer rule is configured without the In-App Purchase key") }
            let signed = offerProduct ?? productId
            let signer = try AppStoreRequestSigner(key: key, bundleId: bundleId)
            body.promotionalOffer = .init(
                messageIdentifier: message.value,
                promotionalOfferSignatureV2: try signer.promotionalOfferV2(
                    productId: signed, offerIdentifier: offerId, transactionId: request.originalTransactionId, issuedAt: receivedAt))
            notice.offerProductId = signed
        case .defaultMessage?, nil:
            break
        }
        let event = FeedEvent(
            type: .retentionRequested, key: key, occurredAt: receivedAt, customerIds: [], previousStatus: facts.state?.status,
            state: facts.state, cause: EventCause(source: .retention), retentionRequest: notice)
        let eventId = try await store.recordRetentionRequest(event, at: receivedAt)
        return Answered(body: body, notice: notice, eventId: eventId)
    }

    /// The subscription a request is about: the app its App Apple ID matched, the environment it
    /// declares, its original transaction id.
    static func key(of request: RealtimeRequest, bundleId: String) throws(IncompleteRealtimeRequest) -> SubscriptionKey {
        for (name, value) in [
            ("originalTransactionId", request.originalTransactionId), ("productId", request.productId),
            ("environment", request.rawEnvironment),
        ] where value?.isEmpty ?? true {
            throw IncompleteRealtimeRequest(missing: name)
        }
        return SubscriptionKey(
            bundleId: bundleId, environment: request.rawEnvironment ?? "", originalTransactionId: request.originalTransactionId ?? "")
    }
}

/// A verified realtime request without a member the answer needs (`malformed_payload`, as
/// ReceiptKit names a payload missing a member).
struct IncompleteRealtimeRequest: CallerError {
    /// Apple's name of the member missing.
    let missing: String

    var code: String { "malformed_payload" }
    var message: String { "the realtime request has no \(missing)" }
}
