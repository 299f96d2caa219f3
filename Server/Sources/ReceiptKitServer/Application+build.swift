public import Foundation
public import Hummingbird
public import Logging
import AppStoreServerAPI
import AsyncHTTPClient
import PostgresNIO
import ReceiptKit
import ServiceLifecycle

/// Builds the server: one verifier and one store, created once from the configuration and shared
/// by every request. The store is migrated before the server accepts connections; a PostgreSQL
/// client runs as one of the application's services, so that `runService()` shuts it down with
/// the server, after the requests in flight have finished (SIGTERM, SIGINT).
///
/// - Parameters:
///   - configuration: Where to listen, what to trust and check, where to store.
///   - logger: The server's logger; each request logs one line through it.
///   - postgresSearchPath: For tests: a PostgreSQL schema to use instead of the default.
///   - clock: The current time, read at each request (its `receivedAt`, and `as_of` when none
///     is given).
/// - Returns: The application, ready for `runService()`.
/// - Throws: ``StoreError`` when a SQLite database cannot be opened; ``ConfigurationError`` or
///   `AppStoreServerAPIError` when the App Store Server API settings cannot make a client.
public func buildApplication(
    configuration: ServerConfiguration, logger: Logger, postgresSearchPath: String? = nil,
    clock: @escaping @Sendable () -> Date = { Date() }
) throws -> some ApplicationProtocol {
    try buildServer(configuration: configuration, logger: logger, postgresSearchPath: postgresSearchPath, clock: clock).application
}

/// The server ``buildApplication(configuration:logger:postgresSearchPath:clock:)`` builds, with
/// the routes its router holds: what the tests hold `Server/openapi.yaml` to.
package struct BuiltServer {
    /// The application, ready for `runService()`.
    package let application: Application<RouterResponder<ServerRequestContext>>
    /// Every route, as its method (`GET`) and its path with `{parameter}` captures
    /// (`/v1/customers/{customer_id}/entitlements`).
    package let routes: [(method: String, path: String)]
}

/// Builds the server and lists its routes (``buildApplication(configuration:logger:postgresSearchPath:clock:)``).
///
/// - Throws: As ``buildApplication(configuration:logger:postgresSearchPath:clock:)``.
package func buildServer(
    configuration: ServerConfiguration, logger: Logger, postgresSearchPath: String? = nil,
    clock: @escaping @Sendable () -> Date = { Date() }
) throws -> BuiltServer {
    let metrics = ServerMetrics()
    let wake = DeliveryWake()
    var features = RecordingFeatures(targets: configuration.events.targets, observer: { commit in
        for event in commit.events { metrics.feedEvent(type: event.type, bundleId: event.bundleId, environment: event.environment) }
        if commit.outboxRows > 0 { wake.signal() }
    })
    features.entitlements = configuration.entitlements
    let store = try Store(
        configuration.database, logger: logger, postgresSearchPath: postgresSearchPath, features: features, timeout: configuration.databaseTimeout)
    var services: [any Service] = store.postgresClient.map { [$0] } ?? []
    let verifier = AppStoreVerifier(configuration.verifier)
    var environment = RouteEnvironment(
        verifier: verifier, store: store, metrics: metrics, clock: clock,
        readinessTimeout: min(Duration.seconds(2), configuration.requestTimeout / 2),
        rejections: NotificationRejections(since: Timestamp(clock())))
    environment.entitlementsFile = configuration.entitlements
    // Each finished once the store is migrated: the periodic reconcile, the sweep and the
    // delivery wait for it.
    let (migrated, migratedContinuation) = AsyncStream.makeStream(of: Void.self)
    let (sweepMigrated, sweepMigratedContinuation) = AsyncStream.makeStream(of: Void.self)
    let (deliveryMigrated, deliveryMigratedContinuation) = AsyncStream.makeStream(of: Void.self)
    var sweep = SweepService(
        store: store, interval: configuration.events.sweepInterval, clock: clock, logger: logger, migrated: sweepMigrated)
    for notice in configuration.notices { logger.notice("\(notice)") }
    var reconciler: Reconciler?
    if let settings = configuration.appStoreAPI {
        let apple = try AppleAPI.make(configuration, ingestion: environment.ingestion, metrics: metrics, logger: logger, clock: clock)
        environment.apple = apple
        reconciler = apple.map { Reconciler(api: $0, store: store, owner: UUID().uuidString.lowercased()) }
        if let reconciler, let interval = settings.reconcileInterval {
            services.append(ReconcileService(
                reconciler: reconciler, interval: interval, clock: clock, logger: logger, migrated: migrated))
        }
        for sync in apple?.pairs.compactMap({ apple?.syncs[$0] }) ?? [] {
            logger.info(
                "reconciliation with Apple is on",
                metadata: [
                    "bundle_id": "\(sync.bundleId)", "environment": "\(sync.environment.rawValue)", "api": "\(sync.client.baseURL)",
                    "key_id": "\(settings.key.keyId)",
                ])
        }
    } else {
        logger.notice(
            "reconciliation with Apple is off: set RECEIPTKIT_APPSTORE_KEY_ID, RECEIPTKIT_APPSTORE_ISSUER_ID and RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE to turn it on")
    }

    let events = configuration.events
    var sender = DeliverySender(secret: Array((events.webhookSecret ?? "").utf8), policy: events.delivery, clock: clock)
    if let apple = environment.apple {
        sender.consumption = { delivery in await apple.sendConsumption(delivery, store: store) }
        if let answer = events.consumptionDefault {
            sweep.consumptionDefault = (ConsumptionRequests(store: store, canSend: true), answer)
        }
    } else if events.consumptionDefault != nil {
        throw ConfigurationError("RECEIPTKIT_CONSUMPTION_DEFAULT is set but the App Store Server API is not (RECEIPTKIT_APPSTORE_*)")
    }
    services.append(sweep)
    // Nothing to send without a receiver (rows a former configuration wrote wait for one).
    if events.webhookURL != nil || !events.forwardURLs.isEmpty || environment.apple != nil {
        services.append(DeliveryService(
            outbox: store, sender: sender, policy: events.delivery, clock: clock, wake: wake, metrics: metrics, logger: logger,
            owner: UUID().uuidString.lowercased(), migrated: deliveryMigrated))
    }
    if let url = events.webhookURL {
        logger.info("events are sent to the webhook", metadata: ["url": "\(url)"])
    }

    if configuration.retention?.rules.signsOffers == true, environment.apple == nil {
        throw ConfigurationError("RECEIPTKIT_RETENTION_RULES answers with a promotional offer, which the In-App Purchase key signs: set RECEIPTKIT_APPSTORE_*")
    }
    let retention = RetentionController(environment: environment, requests: RetentionRequests(
        rules: configuration.retention?.rules ?? RetentionRules([]), key: environment.apple?.key, store: store))
    if let retention = configuration.retention {
        logger.info(
            "Get Retention Message requests are answered by the rules",
            metadata: ["file": "\(retention.file)", "rules": "\(retention.rules.rules.count)"])
    }

    let router = Router(context: ServerRequestContext.self)
    let methods = RouteMethods()
    router.add(middleware: RequestLogMiddleware(metrics: environment.metrics, timeout: configuration.requestTimeout, methods: methods))
    HealthController(environment: environment).add(to: router)
    NotificationController(environment: environment).add(to: router)
    retention.add(to: router)
    let tokens = try APITokens(token: configuration.apiToken, file: configuration.apiTokensFile)
    if tokens.file != nil || configuration.entitlements != nil {
        services.append(SignalReloadService(
            tokens: tokens, entitlements: configuration.entitlements.map { ($0, store, { Timestamp(clock()) }) }, logger: logger))
    }
    if let file = configuration.entitlements {
        logger.info("named entitlements are answered", metadata: ["file": "\(file.path)", "entitlements": "\(file.catalog.names.count)"])
    }
    let console = ConsoleController(environment: environment, tokenRequired: !tokens.isEmpty)
    console.addPage(to: router)
    let authenticated = router.group().add(middleware: BearerTokenMiddleware(tokens: tokens))
    VerifyReceiptController(environment: environment).add(to: authenticated)
    let v1 = authenticated.group("v1")
    TransactionController(environment: environment).add(to: v1)
    EntitlementController(environment: environment).add(to: v1)
    GrantController(environment: environment).add(to: v1)
    CustomerController(environment: environment).add(to: v1)
    ReconcileController(environment: environment, reconciler: reconciler).add(to: v1)
    OfferController(environment: environment).add(to: v1)
    FeedController(environment: environment).add(to: v1)
    DeliveryController(environment: environment, retryWindow: events.retryWindow).add(to: v1)
    ConsumptionController(environment: environment).add(to: v1)
    retention.addReads(to: v1)
    console.add(to: v1)
    TokenController().add(to: v1)

    var app = Application(
        router: router,
        server: .http1(configuration: .init(idleTimeout: .seconds(60))),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "receiptkit-server"),
        services: services,
        logger: logger)
    app.beforeServerStarts {
        try await store.migrate(at: clock())
        // A duration on a product the store knows as another type stops the start, naming it.
        if let file = configuration.entitlements {
            try await EntitlementsFile.check(file.catalog, path: file.path, against: store, at: Timestamp(clock()))
        }
        migratedContinuation.finish()
        sweepMigratedContinuation.finish()
        deliveryMigratedContinuation.finish()
    }
    let routes = router.routes.map { (method: $0.method.rawValue, path: $0.path.description) }
    methods.fill(routes)
    return BuiltServer(application: app, routes: routes)
}
