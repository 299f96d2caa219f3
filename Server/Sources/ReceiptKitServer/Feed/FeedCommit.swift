/// What a commit wrote to the feed, told to the server after the commit (metrics, and the
/// delivery worker's wake-up).
public struct FeedCommit: Sendable {
    /// The types of the events written, one per event.
    public var eventTypes: [String] = []
    /// How many outbox rows were written.
    public var outboxRows = 0

    var isEmpty: Bool { eventTypes.isEmpty && outboxRows == 0 }

    mutating func merge(_ other: FeedCommit) {
        eventTypes += other.eventTypes
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

    /// Creates settings.
    public init(targets: OutboxTargets = OutboxTargets(), observer: (@Sendable (FeedCommit) -> Void)? = nil) {
        self.targets = targets
        self.observer = observer
    }

    func tell(_ commit: FeedCommit) {
        if !commit.isEmpty { observer?(commit) }
    }
}
