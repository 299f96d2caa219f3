/// What a commit wrote to the feed, told to the server after the commit (metrics, and the
/// delivery worker's wake-up).
public struct FeedCommit: Sendable {
    /// The events written: each one's type, app and environment.
    public var events: [(type: String, bundleId: String, environment: String)] = []
    /// How many outbox rows were written.
    public var outboxRows = 0

    var isEmpty: Bool { events.isEmpty && outboxRows == 0 }

    mutating func merge(_ other: FeedCommit) {
        events += other.events
        outboxRows += other.outboxRows
    }
}

/// What the store does besides storing: where the feed's events and notifications are sent, and
/// whom to tell what each commit wrote.
public struct FeedSettings: Sendable {
    /// Where events and notifications are sent: their outbox rows are written with them.
    public var targets: OutboxTargets
    /// Called after each commit that wrote events or outbox rows (metrics, and the delivery
    /// worker's wake-up); never before the commit.
    public var observer: (@Sendable (FeedCommit) -> Void)?
    /// The named entitlements (`RECEIPTKIT_ENTITLEMENTS_FILE`), whose changes the feed tells;
    /// `nil`: none.
    package var entitlements: EntitlementsFile?

    /// Creates settings.
    public init(targets: OutboxTargets = OutboxTargets(), observer: (@Sendable (FeedCommit) -> Void)? = nil) {
        self.targets = targets
        self.observer = observer
    }

    func tell(_ commit: FeedCommit) {
        if !commit.isEmpty { observer?(commit) }
    }
}
