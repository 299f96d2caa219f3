import AppStoreServerAPI
import Foundation
import Hummingbird
import Logging
import ReceiptKit

/// The App Store Server API for every app and environment served: one In-App Purchase key for
/// the team, one client per (app, environment) — each call's token names its app (`bid`), each
/// environment has its own base URL — and a ``AppleSync`` over each.
struct AppleAPI: Sendable {
    /// An app and an environment: what one client calls Apple for.
    struct Pair: Sendable, Hashable, Comparable, CustomStringConvertible {
        let bundleId: String
        let environment: AppStoreEnvironment

        /// Apps by bundle id, each's Production before its Sandbox (Apple's order of lookup),
        /// then any other environment.
        static func < (lhs: Pair, rhs: Pair) -> Bool {
            (lhs.bundleId, lhs.lookupRank, lhs.environment.rawValue) < (rhs.bundleId, rhs.lookupRank, rhs.environment.rawValue)
        }

        private var lookupRank: Int {
            switch environment {
            case .production: 0
            case .sandbox: 1
            default: 2
            }
        }

        var description: String { "\(bundleId) in \(environment.rawValue)" }
    }

    /// The key every client signs with.
    let key: InAppPurchaseKey
    /// Each pair's sync, in ``Pair`` order.
    let syncs: [Pair: AppleSync]
    /// The apps served, in configuration order.
    let bundleIds: [String]

    /// The pairs, apps by bundle id and each's Production first.
    var pairs: [Pair] { syncs.keys.sorted() }

    /// The sync of one app in one environment, or `nil` when the server does not call Apple for
    /// that pair.
    func sync(bundleId: String, environment: String) -> AppleSync? {
        AppStoreEnvironment(rawValue: environment).flatMap { syncs[Pair(bundleId: bundleId, environment: $0)] }
    }

    /// The app a request means: the one it names, which must be served, or the only one.
    ///
    /// - Throws: ``InvalidInput`` naming the bundle ids served when several are and the request
    ///   names none, or when it names one not served.
    func bundleId(_ named: String?) throws(InvalidInput) -> String {
        if let named {
            guard bundleIds.contains(named) else {
                throw InvalidInput("bundle_id \"\(named)\" is not served; served: \(bundleIds.joined(separator: ", "))")
            }
            return named
        }
        guard bundleIds.count == 1, let only = bundleIds.first else {
            throw InvalidInput("bundle_id is required: several apps are served (\(bundleIds.joined(separator: ", ")))")
        }
        return only
    }

    /// The syncs to ask, in turn, for a transaction id of `bundleId`: the environment named, or
    /// every environment the server calls Apple for, Production first (Apple's documented order:
    /// a Sandbox transaction is not found in Production).
    ///
    /// - Throws: ``InvalidInput`` for an environment that is not one, or one the server does not
    ///   call Apple for.
    func syncs(bundleId: String, environment named: String?) throws(InvalidInput) -> [AppleSync] {
        let candidates = pairs.filter { $0.bundleId == bundleId }
        guard let named else { return candidates.compactMap { syncs[$0] } }
        guard let environment = AppStoreEnvironment(rawValue: named) else {
            throw InvalidInput("environment is \"\(named)\"; expected Production, Sandbox, Xcode or LocalTesting")
        }
        guard let sync = syncs[Pair(bundleId: bundleId, environment: environment)] else {
            throw InvalidInput(
                "the server does not call the App Store Server API for \(bundleId) in \(named); it does in \(candidates.map(\.environment.rawValue).joined(separator: ", "))")
        }
        return [sync]
    }

    /// A purchase the backend reported by its id (``purchase(transactionId:customerId:bundleId:environment:receivedAt:)``).
    struct PurchaseByID: Sendable {
        /// The customer it is linked to: the one given, or the first `appAccountToken` Apple
        /// lists.
        let customerId: String
        /// Whether anything Apple answered was stored for the first time.
        let isNew: Bool
        /// The record of the transaction named (or, for an app transaction id, of the last one
        /// Apple listed), as `verify-receipt` prints it; `nil` when none of it was stored.
        let record: String?
    }

    /// A purchase reported by its id: the customer's history (every page) and statuses, from
    /// Apple, verified, stored and linked. Apple is asked for the app named (required when
    /// several are served) in the environment named, or in Production and then, when Production
    /// does not know the transaction, in Sandbox. The whole history was read: a sync of these
    /// keys continues from here.
    ///
    /// - Throws: ``InvalidInput`` (an id that is not one, an app or environment not served, no
    ///   customer to link it to); ``AppleFailure`` (`transactionNotFound`, `answerRejected` when
    ///   nothing Apple answered verified, …); `StoreError`.
    func purchase(
        transactionId: String, customerId: String?, bundleId: String?, environment named: String?, receivedAt now: Timestamp
    ) async throws -> PurchaseByID {
        try AppleSync.checkTransactionId(transactionId)
        let syncs = try syncs(bundleId: self.bundleId(bundleId), environment: named)
        let (sync, fetched) = try await fetch(transactionId: transactionId, from: syncs)
        guard !fetched.transactions.isEmpty else {
            if !fetched.rejected.isEmpty { throw AppleFailure.answerRejected(count: fetched.rejected.count) }
            throw AppleFailure.transactionNotFound(transactionId: transactionId, apple: nil)
        }
        let named = fetched.transactions.last { $0.verified.payload.transactionId == transactionId }
            ?? fetched.transactions.last { $0.verified.payload.originalTransactionId == transactionId }
            ?? fetched.transactions.last
        let tokens = ([named] + fetched.transactions).compactMap { $0?.verified.payload.appAccountToken }
        guard let customer = customerId ?? tokens.first(where: { !$0.isEmpty }) else {
            throw InvalidInput("customer_id is required: the purchases Apple lists carry no appAccountToken to link them to")
        }
        let stored = try await sync.store(fetched, customerId: customer, receivedAt: now)
        try await sync.remember(fetched, keys: stored.keys, at: now)
        return PurchaseByID(
            customerId: customer, isNew: stored.new > 0, record: named?.verified.payload.transactionId.flatMap { stored.records[$0] })
    }

    /// Brings every subscription linked to a customer up to date with Apple
    /// (``AppleSync/sync(originalTransactionId:customerId:receivedAt:)``): one fetch per Apple
    /// account, since one history answers for every subscription of the account; a subscription
    /// of an app or environment the server does not call Apple for is left as it is.
    ///
    /// - Returns: `false` when no subscription is linked to the customer (nothing was asked).
    /// - Throws: ``AppleFailure``; `StoreError` when the database fails.
    func sync(customerId: String, store: Store, receivedAt: Timestamp) async throws -> Bool {
        let keys = try await store.run { try await store.keys(customerId: customerId) }
        guard !keys.isEmpty else { return false }
        var synced: Set<SubscriptionKey> = []
        for key in keys where !synced.contains(key) {
            guard let sync = sync(bundleId: key.bundleId, environment: key.environment) else { continue }
            let stored = try await sync.sync(originalTransactionId: key.originalTransactionId, customerId: customerId, receivedAt: receivedAt)
            synced.formUnion(stored.keys)
            synced.insert(key)
        }
        return true
    }

    /// Fetches a transaction id's history and statuses from the first of `syncs` that knows it:
    /// on Apple's "not found" the next is asked.
    ///
    /// - Returns: The sync that answered, and what it fetched.
    /// - Throws: ``AppleFailure/transactionNotFound(transactionId:apple:)`` when none knows it;
    ///   any other failure of Apple's at once.
    func fetch(transactionId: String, from syncs: [AppleSync]) async throws -> (sync: AppleSync, fetched: AppleSync.Fetched) {
        var notFound: AppleFailure?
        for sync in syncs {
            do {
                return (sync, try await sync.fetch(transactionId: transactionId))
            } catch let error as AppleFailure {
                guard case .transactionNotFound = error else { throw error }
                notFound = error
            }
        }
        throw notFound ?? AppleFailure.transactionNotFound(transactionId: transactionId, apple: nil)
    }

    /// Sends a consumption answer from the outbox to the app and environment of its request's
    /// transaction (``AppleSync/sendConsumption(_:)``). When the request cannot be read (the
    /// database unavailable), the attempt fails and is tried again.
    func sendConsumption(_ delivery: Delivery, store: Store) async -> DeliverySender.Result {
        let request: StoredConsumptionRequest?
        do {
            request = try await store.consumptionRequest(transactionId: delivery.target)
        } catch {
            return .failed(status: nil, error: "the consumption request could not be read: \(error)")
        }
        guard let request, let sync = sync(bundleId: request.bundleId, environment: request.environment) else {
            return .refused(
                status: nil,
                error: "no consumption request of transaction \(delivery.target) in an app and environment the server calls Apple for")
        }
        return await sync.sendConsumption(delivery)
    }

    /// The clients of a configuration, or `nil` when it names no In-App Purchase key.
    ///
    /// - Throws: `AppStoreServerAPIError` when a client cannot be made (a bad base URL).
    static func make(
        _ configuration: ServerConfiguration, ingestion: Ingestion, metrics: ServerMetrics, logger: Logger,
        clock: @escaping @Sendable () -> Date
    ) throws -> AppleAPI? {
        guard let settings = configuration.appStoreAPI else { return nil }
        let bundleIds = configuration.verifier.apps.compactMap(\.bundleId)
        var syncs: [Pair: AppleSync] = [:]
        for bundleId in bundleIds {
            for environment in settings.environments(among: configuration.verifier.environments) {
                let client = try AppStoreServerAPIClient(
                    configuration: .init(
                        key: settings.key, bundleId: bundleId, environment: environment, baseURL: settings.baseURLs[environment],
                        retry: settings.retry),
                    verifier: ingestion.verifier, clock: clock)
                syncs[Pair(bundleId: bundleId, environment: environment)] = AppleSync(
                    client: client, ingestion: ingestion, metrics: metrics, logger: logger, bundleId: bundleId, environment: environment)
            }
        }
        return AppleAPI(key: settings.key, syncs: syncs, bundleIds: bundleIds)
    }
}
