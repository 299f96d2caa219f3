/// One event of the feed as stored: its id and its JSON, exactly as served and delivered.
public struct StoredFeedEvent: Sendable, Hashable {
    /// Its position in the feed.
    public var id: Int64
    /// ``FeedEvent/json(id:)``.
    public var json: String
}
