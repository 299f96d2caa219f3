import AppStoreServerAPI
import Foundation
import Hummingbird
import Logging
import ReceiptKit

/// Fetches what Apple has for a customer (Get Transaction History v2, every page, and Get All
/// Subscription Statuses) and stores it through the one path every input takes: each item the
/// client verified becomes a ``VerificationRecord``, recorded by ``Ingestion`` — so an item the
/// service already holds is a replay and changes nothing. An item that failed verification is never stored: it is counted
/// (`receiptkit_reconcile_rejected_total{code}`) and logged with its code.
struct AppleSync: Sendable {
    let client: AppStoreServerAPIClient
    /// Where what Apple answers goes: recorded as every input is.
    let ingestion: Ingestion
    let metrics: ServerMetrics
    let logger: Logger
    /// The app this sync's client calls Apple for (its token's `bid`).
    let bundleId: String
    /// The environment this sync's client calls Apple in.
    let environment: AppStoreEnvironment

    /// What Apple answered for a customer, verified, not yet stored.
    struct Fetched: Sendable {
        /// The transactions that verified, in Apple's order (history first, then the statuses'
        /// latest transactions).
        var transactions: [VerifiedItem<JWSTransaction>] = []
        /// The statuses' renewal infos that verified.
        var renewalInfos: [VerifiedItem<JWSRenewalInfo>] = []
        /// The items that did not verify.
        var rejected: [RejectedItem] = []
        /// The last history page's revision token: where the next fetch continues.
        var revision: String?
    }

    /// What storing a fetch did.
    struct Stored: Sendable {
        /// Inputs stored for the first time.
        var new = 0
        /// Items already stored: replays, and copies Apple signed again that say nothing new.
        var replays = 0
        /// The records stored, by transaction id, as `verify-receipt` prints them.
        var records: [String: String] = [:]
        /// The keys the fetch touched.
        var keys: Set<SubscriptionKey> = []
    }

    /// The most history pages one fetch reads (20 transactions each): a guard against a token
    /// that never ends, far above any real customer's history.
    static let maximumPages = 10_000

    /// Fetches a customer's history from `revision` on (every page) and their subscriptions'
    /// statuses.
    ///
    /// - Parameters:
    ///   - transactionId: Any transaction id, original transaction id or app transaction id of
    ///     the customer.
    ///   - revision: The revision token a previous fetch ended with, or `nil` for everything.
    /// - Throws: ``AppleFailure``: `transactionNotFound`, `unavailable` (with the seconds after
    ///   which to retry), `keyRefused`, `failed`.
    func fetch(transactionId: String, revision: String? = nil) async throws -> Fetched {
        var fetched = Fetched()
        var token = revision
        var seen: Set<String> = []
        for _ in 0..<Self.maximumPages {
            let page = try await call("transaction_history", transactionId: transactionId) { [token] in
                do {
                    return try await client.transactionHistory(transactionId, revision: token)
                } catch let error as AppStoreServerAPIError where error.apiErrorCode == .invalidRequestRevision && token == revision && token != nil {
                    // A stored token Apple no longer takes: the whole history again (replays
                    // change nothing).
                    logger.notice("Apple refused a stored revision token; fetching the whole history", metadata: ["transaction_id": "\(transactionId)"])
                    return try await client.transactionHistory(transactionId, revision: nil)
                }
            }
            fetched.transactions += page.transactions
            rejected(page.rejected, into: &fetched)
            if let next = page.revision { fetched.revision = next }
            guard page.hasMore, let next = page.revision, seen.insert(next).inserted else { break }
            token = next
        }
        let statuses = try await call("subscription_statuses", transactionId: transactionId) {
            try await client.subscriptionStatuses(transactionId)
        }
        for group in statuses.groups {
            for last in group.lastTransactions {
                fetched.transactions.append(last.transaction)
                fetched.renewalInfos.append(last.renewalInfo)
            }
        }
        rejected(statuses.rejected, into: &fetched)
        return fetched
    }

    /// Brings a key up to date: the history from the revision token stored for it (only what is
    /// new) and the statuses, stored, and the new revision token remembered for every key the
    /// fetch touched.
    ///
    /// - Parameters:
    ///   - originalTransactionId: The key's original transaction id (any transaction id of the
    ///     customer works as well).
    ///   - customerId: A customer to link every key the fetch touches to, if any.
    /// - Returns: What was stored.
    func sync(originalTransactionId: String, customerId: String?, receivedAt: Timestamp) async throws -> Stored {
        let key = SubscriptionKey(bundleId: bundleId, environment: environment.rawValue, originalTransactionId: originalTransactionId)
        let database = ingestion.store
        let revision = try await database.run { try await database.historyRevision(of: key) }
        let fetched = try await fetch(transactionId: originalTransactionId, revision: revision)
        let stored = try await store(fetched, customerId: customerId, receivedAt: receivedAt)
        try await remember(fetched, keys: stored.keys.union([key]), at: receivedAt)
        return stored
    }

    /// Remembers where a fetch's history ended for these keys — unless an item was rejected: the
    /// next sync then reads it again rather than continuing past it.
    func remember(_ fetched: Fetched, keys: Set<SubscriptionKey>, at instant: Timestamp) async throws {
        guard let next = fetched.revision, fetched.rejected.isEmpty, !keys.isEmpty else { return }
        let keys = Array(keys)
        let database = ingestion.store
        try await database.run { try await database.setHistoryRevision(next, for: keys, at: instant.millisecondsSince1970) }
    }

    /// Stores every verified item of a fetch, each as its own input, linking its keys to
    /// `customerId` (and to each transaction's `appAccountToken`, as every input is linked). An
    /// item that only repeats the stored copy of its transaction or renewal info, signed again
    /// (``VerifiedInput/skipsRepeats``), is not a new input: it counts as a replay.
    func store(_ fetched: Fetched, customerId: String?, receivedAt: Timestamp) async throws -> Stored {
        var stored = Stored()
        var records: [(VerificationRecord, [UInt8], String?)] = fetched.transactions.map {
            (VerificationRecord($0.verified), Array($0.jws.utf8), $0.verified.payload.transactionId)
        }
        records += fetched.renewalInfos.map { (VerificationRecord($0.verified), Array($0.jws.utf8), nil) }
        for (record, raw, transactionId) in records {
            // Apple signs every answer anew: a copy that only repeats the stored one is not new.
            let recorded = try await ingestion.record(
                record, raw: raw, customerId: customerId, receivedAt: receivedAt, source: .reconcile, skipsRepeats: true,
                bundleId: bundleId)
            if recorded.isNew { stored.new += 1 } else { stored.replays += 1 }
            stored.keys.formUnion(recorded.input.keys)
            if let transactionId { stored.records[transactionId] = recorded.input.record }
        }
        return stored
    }

    /// Sends a consumption answer from the outbox (``DeliverySender``): accepted when Apple took
    /// it; tried again when Apple is unavailable or refused the key (a configuration that can be
    /// fixed); refused (dead-lettered) when Apple refused the answer itself.
    func sendConsumption(_ delivery: Delivery) async -> DeliverySender.Result {
        guard let request = ConsumptionAnswer.apple(delivery.body) else {
            return .refused(status: nil, error: "the stored answer is not a consumption request")
        }
        do {
            try await client.sendConsumptionInformation(delivery.target, request)
            metrics.appStoreCall(endpoint: "consumption", status: 202, result: "ok", bundleId: bundleId, environment: environment.rawValue)
            return .accepted(status: 202)
        } catch let error as AppStoreServerAPIError {
            metrics.appStoreCall(
                endpoint: "consumption", status: error.httpStatus, result: error.code.rawValue, bundleId: bundleId,
                environment: environment.rawValue)
            switch error.code {
            case .rateLimited, .serverError, .connectionFailed, .timeout, .unauthorized:
                return .failed(status: error.httpStatus, error: error.description)
            default:
                return .refused(status: error.httpStatus, error: error.description)
            }
        } catch {
            return .failed(status: nil, error: "\(error)")
        }
    }

    /// Apple's transaction ids are decimal numbers; anything else is 400 before Apple is asked.
    static func checkTransactionId(_ id: String, name: String = "transaction_id") throws(InvalidInput) {
        guard !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw InvalidInput("\(name) must be an App Store transaction id: 1 to 64 decimal digits")
        }
    }

    private func rejected(_ items: [RejectedItem], into fetched: inout Fetched) {
        for item in items {
            metrics.reconcileRejected(code: item.error.code.rawValue, bundleId: bundleId, environment: environment.rawValue)
            logger.warning(
                "an item Apple answered did not verify and is not stored",
                metadata: ["field": "\(item.field)", "code": "\(item.error.code.rawValue)", "reason": "\(item.error.message)"])
        }
        fetched.rejected += items
    }

    /// Calls Apple, counts the call by endpoint, Apple's HTTP status and outcome, and turns a
    /// failure into an ``AppleFailure``.
    func call<Answer>(
        _ endpoint: String, transactionId: String? = nil, _ body: () async throws -> Answer
    ) async throws -> Answer {
        do {
            let answer = try await body()
            // Every endpoint the service calls answers 200 when it answers at all.
            metrics.appStoreCall(endpoint: endpoint, status: 200, result: "ok", bundleId: bundleId, environment: environment.rawValue)
            return answer
        } catch let error as AppStoreServerAPIError {
            metrics.appStoreCall(
                endpoint: endpoint, status: error.httpStatus, result: error.code.rawValue, bundleId: bundleId,
                environment: environment.rawValue)
            logger.notice(
                "the App Store Server API failed",
                metadata: ["endpoint": "\(endpoint)", "bundle_id": "\(bundleId)", "environment": "\(environment.rawValue)", "error": "\(error)"])
            throw AppleFailure(error, transactionId: transactionId)
        }
    }

}
