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
