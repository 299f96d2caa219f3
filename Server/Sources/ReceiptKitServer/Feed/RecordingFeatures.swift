package import Logging
import ReceiptKit

/// What recording an input runs besides storing it: the feed's events and where they and the
/// notifications are sent, the customers' named entitlements, and whom to tell what each commit
/// wrote (``StoreFeatures``, the store's side of it).
public struct RecordingFeatures: Sendable {
    /// Where events and notifications are sent: their outbox rows are written with them.
    public var targets: OutboxTargets
    /// Called after each commit that wrote events or outbox rows (metrics, and the delivery
    /// worker's wake-up); never before the commit.
    public var observer: (@Sendable (FeedCommit) -> Void)?
    /// The named entitlements (`RECEIPTKIT_ENTITLEMENTS_FILE`), whose changes the feed tells;
    /// `nil`: none.
    package var entitlements: EntitlementsFile?

    /// Features with these targets and observer, and no named entitlements.
    public init(targets: OutboxTargets = OutboxTargets(), observer: (@Sendable (FeedCommit) -> Void)? = nil) {
        self.targets = targets
        self.observer = observer
    }

    func tell(_ commit: FeedCommit) {
        if !commit.isEmpty { observer?(commit) }
    }
}

/// The server's features as the store runs them: a new input's feed derivation (``Derivation``)
/// and its customers' named entitlements (``EntitlementDerivation``), with these targets.
extension RecordingFeatures: StoreFeatures {
    func derivation(of input: VerifiedInput, written: WrittenCopies) -> any RowSteps<DerivedWrites> & Sendable {
        MappedSteps(Derivation(input, targets: targets, written: written)) { DerivedWrites(writes: $0.writes, commit: $0.commit) }
    }

    func setting<Setting>(_ type: Setting.Type) -> Setting? {
        if let targets = targets as? Setting { return targets }
        return entitlements.flatMap { $0 as? Setting }
    }

    func entitlementDerivation(
        of input: VerifiedInput, customersOf keys: [SubscriptionKey], written: WrittenCopies
    ) -> (any RowSteps<DerivedWrites> & Sendable)? {
        guard let catalog = entitlements?.catalog else { return nil }
        let derivation = EntitlementDerivation(
            customers: input.orderedLinks.map(\.customerId), at: Timestamp(millisecondsSince1970: input.receivedAt),
            cause: input.cause, recordedAt: input.receivedAt, targets: targets, catalog: catalog, written: written, customersOf: keys)
        return MappedSteps(derivation) { DerivedWrites(writes: $0.writes, commit: $0.commit) }
    }
}

/// A store made with the server's features (the designated initializers take any
/// ``StoreFeatures``; these, the server's own).
extension Store {
    /// Opens (or creates) a SQLite database file.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - features: What recording runs besides storing: where the feed's events go, the named
    ///     entitlements, whom to tell what each commit wrote.
    ///   - timeout: How long one store call waits for the database (``timeout``).
    /// - Throws: ``StoreError`` when the file cannot be opened as a database.
    package convenience init(sqlitePath path: String, features: RecordingFeatures = RecordingFeatures(), timeout: Duration? = nil) throws {
        try self.init(sqlitePath: path, features: features as any StoreFeatures, timeout: timeout)
    }

    /// Creates a store in PostgreSQL and its client (not yet running: run ``postgresClient``).
    ///
    /// - Parameters:
    ///   - location: The server and database.
    ///   - searchPath: A schema to use instead of the role's default (`search_path`), if any.
    ///   - logger: Where the client logs.
    ///   - features: What recording runs besides storing: where the feed's events go, the named
    ///     entitlements, whom to tell what each commit wrote.
    ///   - timeout: How long one store call waits for the database (``timeout``).
    package convenience init(
        postgres location: PostgresLocation, searchPath: String? = nil, logger: Logger, features: RecordingFeatures = RecordingFeatures(),
        timeout: Duration? = nil
    ) {
        self.init(postgres: location, searchPath: searchPath, logger: logger, features: features as any StoreFeatures, timeout: timeout)
    }

    /// The store a configuration names.
    package convenience init(
        _ database: DatabaseLocation, logger: Logger, postgresSearchPath: String? = nil, features: RecordingFeatures = RecordingFeatures(),
        timeout: Duration? = nil
    ) throws {
        try self.init(database, logger: logger, postgresSearchPath: postgresSearchPath, features: features as any StoreFeatures, timeout: timeout)
    }
}
