import ReceiptKit

/// The feed's rows for an input, or for the passing of time, in the transaction that stores it:
/// each key evaluated at the instant (``Evaluation``, a few rows whatever its history), the feed's
/// rules applied (``FeedDerivation``); then, only when there are events, the customers of their
/// keys read; then, when there are events or a key's derived status or product moved, the feed's
/// ids drawn (``FeedStatements``: last, so that transactions writing events are serialized for
/// their last statements only); then the events, their outbox rows (``OutboxTargets``), each
/// key's derived record, the consumption request and the overview's counts
/// (``CountStatements``) written.
struct Derivation: RowSteps, Sendable {
    /// What the derivation writes, and what it tells the server after the commit.
    struct Result: Sendable {
        var writes: [StoreWrite] = []
        var commit = FeedCommit()
        /// Each key's `next_change_at` after the derivation (the sweep continues from it).
        var nextChangeAt: [SubscriptionKey: Int64] = [:]
    }

    let keys: [SubscriptionKey]
    let instant: Timestamp
    let cause: EventCause
    /// When the server wrote it.
    let recordedAt: Int64
    /// Where each event is sent (its outbox rows, in the same transaction).
    let targets: OutboxTargets
    /// A verified notification's bytes, to forward as Apple sent them.
    let forward: [UInt8]?
    /// The consumption request the input is: its event follows its key's changes.
    let consumption: ConsumptionNotice?
    /// The copies the input stored in this transaction.
    let written: WrittenCopies
    private var phase = Phase.evaluating(0, nil)
    private var events: [FeedEvent] = []
    private var result = Result()
    private var customers: [SubscriptionKey: [String]] = [:]
    private var keysWithEvents: [SubscriptionKey] = []
    /// How the keys' derived states move the overview's counts.
    private var counts: [CountStatements.Delta: Int64] = [:]

    private enum Phase {
        case evaluating(Int, Evaluation?)
        case customers(Int)
        case ids
    }

    init(
        keys: [SubscriptionKey], at instant: Timestamp, cause: EventCause, recordedAt: Int64, targets: OutboxTargets,
        forward: [UInt8]? = nil, consumption: ConsumptionNotice? = nil, written: WrittenCopies = WrittenCopies()
    ) {
        self.keys = keys
        self.instant = instant
        self.cause = cause
        self.recordedAt = recordedAt
        self.targets = targets
        self.forward = forward
        self.consumption = consumption
        self.written = written
    }

    /// The derivation of a new input: its keys evaluated at the instant it was received; a
    /// notification is forwarded.
    init(_ input: VerifiedInput, targets: OutboxTargets, written: WrittenCopies) {
        self.init(
            keys: input.orderedKeys, at: Timestamp(millisecondsSince1970: input.receivedAt), cause: input.cause,
            recordedAt: input.receivedAt, targets: targets, forward: input.kind == "notification" ? input.raw : nil,
            consumption: input.consumption, written: written)
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        while true {
            switch phase {
            case .evaluating(let index, let running):
                guard index < keys.count else {
                    keysWithEvents = Array(Set(events.map(\.key))).sorted()
                    phase = .customers(0)
                    continue
                }
                var evaluation = running ?? Evaluation(key: keys[index], at: instant, written: written)
                switch try evaluation.nested(running == nil ? [] : rows, in: Result.self) {
                case .io(let io):
                    phase = .evaluating(index, evaluation)
                    return io
                case .done(let state):
                    apply(FeedDerivation.change(
                        of: keys[index], state: state, stored: evaluation.head.derived, lastKnownFrom: evaluation.head.lastKnownFrom,
                        at: instant, cause: cause, consumption: consumption), to: keys[index], stored: evaluation.head.derived)
                    phase = .evaluating(index + 1, nil)
                }
            case .customers(let index):
                if index > 0 {
                    customers[keysWithEvents[index - 1]] = try LedgerStatements.customersOfKey.decode(rows).sorted()
                }
                guard index < keysWithEvents.count else {
                    // A count moves only after the feed's counter is held (see ``CountStatements``).
                    guard !events.isEmpty || counts.values.contains(where: { $0 != 0 }) else { return .done(finish()) }
                    phase = .ids
                    return .fetch(FeedStatements.drawIds.fetch(["count": .integer(Int64(events.count))]))
                }
                phase = .customers(index + 1)
                return .fetch(LedgerStatements.customersOfKey.fetch(LedgerStatements.key(keysWithEvents[index])))
            case .ids:
                guard let last = try FeedStatements.drawIds.decodeFirst(rows) else { throw StoreError.damaged("feed_counter has no row") }
                var id = last - Int64(events.count)
                for var event in events {
                    id += 1
                    event.customerIds = customers[event.key] ?? []
                    let json = try event.json(id: id)
                    result.writes.append(event.write(id: id, json: json, recordedAt: recordedAt))
                    result.commit.events.append((event.type.rawValue, event.key.bundleId, event.key.environment))
                    if let row = targets.webhookRow(eventId: id, json: json, key: event.key, at: recordedAt) {
                        result.writes.append(OutboxStatements.write(row))
                        result.commit.outboxRows += 1
                    }
                }
                return .done(finish())
            }
        }
    }

    /// Takes one key's change: its consumption request and derived record are written now, its
    /// events once their ids are drawn, the counts it moves (from `stored`) at the end.
    private mutating func apply(_ change: FeedDerivation.KeyChange, to key: SubscriptionKey, stored: DerivedRecord) {
        events += change.events
        if let request = change.consumptionRequest {
            result.writes.append(ConsumptionStatements.requestWrite(request))
        }
        if let next = change.nextChangeAt { result.nextChangeAt[key] = next }
        if let derived = change.derived {
            result.writes.append(FeedStatements.derivedWrite(key, derived, at: instant.millisecondsSince1970))
            counts.merge(CountStatements.deltas(of: key, from: stored.state, to: derived.state), uniquingKeysWith: +)
        }
    }

    /// The result with the input's forwards and the counts moved.
    private mutating func finish() -> Result {
        result.writes += CountStatements.countWrites(counts)
        if let forward {
            for row in targets.forwardRows(forward, keys: keys, at: recordedAt) {
                result.writes.append(OutboxStatements.write(row))
                result.commit.outboxRows += 1
            }
        }
        return result
    }
}
