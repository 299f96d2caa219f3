import ReceiptKit

/// Which events the feed writes for a key, and what it remembers of the key: the feed's rules,
/// pure. A key evaluated at an instant (by ReceiptKit, from its stored copies) is compared with the
/// state the feed derived last for it; the difference is named by ``EventClassification``. The
/// store runs this in the transaction that stores an input, and the sweep at each instant time
/// alone may change a key (``Derivation``).
enum FeedDerivation {
    /// What one key's evaluation changes in the feed.
    struct KeyChange: Sendable {
        /// The events, in the order they are written; their ids and customers come later.
        var events: [FeedEvent] = []
        /// What the key's row is to say now, when it changed.
        var derived: DerivedRecord?
        /// When to evaluate the key again without an input, if ever.
        var nextChangeAt: Int64?
        /// The consumption request the input is, to store, when it is about this key.
        var consumptionRequest: ConsumptionNotice?
    }

    /// Compares a key's evaluated state with the one derived last and names the changes.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - state: Its state at `instant`, evaluated from its stored copies (`nil`: none known).
    ///   - stored: What the feed derived last for it.
    ///   - lastKnownFrom: When its last copy was signed.
    ///   - instant: The request's instant, or the instant time changed the state (a sweep).
    ///   - cause: The input, or the sweep.
    ///   - consumption: The consumption request the input is, if any: its event follows the key's
    ///     changes.
    static func change(
        of key: SubscriptionKey, state: SubscriptionState?, stored: DerivedRecord, lastKnownFrom: Int64?, at instant: Timestamp,
        cause: EventCause, consumption: ConsumptionNotice?
    ) -> KeyChange {
        var change = KeyChange()
        let current = state.map(DerivedState.init)
        let boundary = DerivedRecord.boundary(state, lastKnownFrom: lastKnownFrom, at: instant)
        if let current {
            for type in EventClassification.changes(from: stored.state, to: current) {
                change.events.append(FeedEvent(
                    type: type, key: key, occurredAt: instant, customerIds: [], previousStatus: stored.state?.status, state: state,
                    cause: cause))
            }
        }
        if let consumption, consumption.key == key {
            change.events.append(FeedEvent(
                type: .consumptionRequested, key: key, occurredAt: instant, customerIds: [],
                previousStatus: current?.status ?? stored.state?.status, state: state, cause: cause,
                consumptionRequest: consumption))
            change.consumptionRequest = consumption
        }
        change.nextChangeAt = boundary
        let derived = DerivedRecord(state: current ?? stored.state, nextChangeAt: boundary)
        if derived != stored { change.derived = derived }
        return change
    }
}
