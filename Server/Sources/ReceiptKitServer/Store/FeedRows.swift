import ReceiptKit

/// The feed's rows (``Schema`` v8), written once for both databases: the state each key's last
/// event was derived from (columns of `subscriptions`), the events (`change_events`), and the
/// counter their ids come from (`feed_counter`).
///
/// An input that changes a key's derived state writes its events in the transaction that stores
/// it (``Derivation``): the key is evaluated at the request's instant by ReceiptKit's
/// ``EntitlementLedger`` (``LedgerRows/Evaluation``, a few rows whatever the key's history),
/// compared with the state stored here, and the difference named by ``ChangeClassification``.
/// A change that comes from time alone is found by the sweep, from `next_change_at`.
///
/// Ids increase in commit order. On SQLite one transaction writes at a time. On PostgreSQL,
/// transactions commit in another order than they draw from a sequence, and a reader paging with
/// `after=ID` would skip an id that commits after a greater one it has already read. So ids come
/// from the one row of `feed_counter`, updated in the transaction that writes the events: its row
/// lock is held until that transaction commits, so the next transaction that writes events waits
/// for it and draws the ids after its own. The counter is taken last, after every key is folded
/// and evaluated, so that the transactions writing events are serialized only for their last
/// statements; an input that changes nothing does not take it.
enum FeedRows {
    /// The columns of `subscriptions` that hold the state the feed derived last, in the order
    /// ``derived(_:)`` reads them.
    static let derivedColumns = [
        "derived_status", "derived_product_id", "derived_transaction_id", "derived_expires_at", "derived_will_renew",
        "derived_subscription", "derived_family_shared", "next_change_at", "derived_at",
    ]
    static let derivedColumnTypes: [StoreColumn] = [.text, .text, .text, .integer, .integer, .integer, .integer, .integer, .integer]

    /// What a key's row says of the feed.
    struct Derived: Sendable, Hashable {
        /// The state the last event (or the migration) was derived from; `nil` before the first.
        var state: DerivedState?
        /// When the state may change by time alone, or a copy signed later becomes known.
        var nextChangeAt: Int64?
    }

    /// Reads ``derivedColumns``.
    static func derived(_ values: ArraySlice<StoreValue>) -> Derived {
        let row = Array(values)
        guard row.count == derivedColumns.count else { return Derived() }
        var derived = Derived(nextChangeAt: row[7].integer)
        if let raw = row[0].text, let status = SubscriptionStatus(rawValue: raw) {
            derived.state = DerivedState(
                status: status, productId: row[1].text, transactionId: row[2].text, expiresAt: row[3].integer,
                willRenew: row[4].integer.map { $0 != 0 }, isSubscription: row[5].integer != 0,
                isFamilyShared: row[6].integer == 1)
        }
        return derived
    }

    static let updateDerived = StoreStatement(
        """
        UPDATE subscriptions SET derived_status = ?, derived_product_id = ?, derived_transaction_id = ?,
            derived_expires_at = ?, derived_will_renew = ?, derived_subscription = ?, derived_family_shared = ?,
            next_change_at = ?, derived_at = ?
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ?
        """)

    /// The write that stores what the feed derived for a key at `instant`.
    static func derivedWrite(_ key: SubscriptionKey, _ derived: Derived, at instant: Int64) -> StoreWrite {
        let state = derived.state
        func flag(_ value: Bool?) -> StoreValue { value.map { .integer($0 ? 1 : 0) } ?? .null }
        return StoreWrite(updateDerived, [
            state.map { .text($0.status.rawValue) } ?? .null, state?.productId.map(StoreValue.text) ?? .null,
            state?.transactionId.map(StoreValue.text) ?? .null, state?.expiresAt.map(StoreValue.integer) ?? .null,
            flag(state?.willRenew), flag(state?.isSubscription), flag(state?.isFamilyShared),
            derived.nextChangeAt.map(StoreValue.integer) ?? .null, .integer(instant),
        ] + LedgerRows.keyValues(key))
    }

    static let customersOfKey = StoreStatement(
        """
        SELECT customer_id FROM customer_subscriptions WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ?
        """, columns: [.text])

    /// Draws `?` ids: answers the last one. Its row lock is held until the transaction commits
    /// (see ``FeedRows``).
    static let drawIds = StoreStatement(
        "UPDATE feed_counter SET last_id = last_id + ? WHERE id = 1 RETURNING last_id", columns: [.integer])

    static let insertEvent = StoreStatement(
        """
        INSERT INTO change_events (id, type, occurred_at, recorded_at, original_transaction_id, bundle_id, environment, payload)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        """)

    // MARK: Reading the feed

    /// The events after an id, oldest first.
    static let eventsAfter = StoreStatement(
        "SELECT id, payload FROM change_events WHERE id > ? ORDER BY id LIMIT ?", columns: [.integer, .text])

    /// A customer's events after an id (those of every key linked to the customer), oldest first.
    static let customerEventsAfter = StoreStatement(
        """
        SELECT e.id, e.payload FROM customer_subscriptions c
        JOIN change_events e ON e.original_transaction_id = c.original_transaction_id AND e.bundle_id = c.bundle_id
            AND e.environment = c.environment
        WHERE c.customer_id = ? AND e.id > ? ORDER BY e.id LIMIT ?
        """, columns: [.integer, .text])

    /// Rows of ``eventsAfter`` or ``customerEventsAfter``.
    static func feedEvents(_ rows: [[StoreValue]]) -> [FeedEvent] {
        rows.compactMap { row in
            guard let id = row[0].integer, let payload = row[1].text else { return nil }
            return FeedEvent(id: id, json: payload)
        }
    }

    // MARK: The sweep

    /// Keys whose derived state may have changed by now, soonest first.
    static let dueKeys = StoreStatement(
        """
        SELECT original_transaction_id, bundle_id, environment FROM subscriptions
        WHERE next_change_at <= ? ORDER BY next_change_at LIMIT ?
        """, columns: [.text, .text, .text])

    /// A due key's `next_change_at`, if it is still due (another server, or an input, may have
    /// moved it). On PostgreSQL ``claimDueKeyPostgres`` locks the row too, skipping a row another
    /// transaction holds.
    static let claimDueKey = StoreStatement(
        """
        SELECT next_change_at FROM subscriptions
        WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ? AND next_change_at <= ?
        """, columns: [.integer])

    /// ``claimDueKey`` with the row locked for the rest of the transaction, or no row when another
    /// transaction holds it (an input folding into the key, or another server's sweep): that one
    /// derives the key.
    static let claimDueKeyPostgres = StoreStatement(claimDueKey.sql + " FOR UPDATE SKIP LOCKED", columns: [.integer])

    /// The most boundaries one sweep of a key passes (a period, a grace period, a retry window:
    /// three follow one another at most).
    static let maximumBoundaries = 8

    /// One due key swept in its own transaction: its `next_change_at` claimed (``claimDueKey``, or
    /// ``claimDueKeyPostgres``), then the key derived at each boundary its state passes up to
    /// `now`, each derivation's writes run before the next reads the state they leave.
    struct Sweeping: RowSteps {
        let key: SubscriptionKey
        let now: Timestamp
        let targets: OutboxTargets
        let claim: StoreStatement
        private var phase = Phase.start
        private var commit = FeedCommit()
        private var boundaries = 0

        private enum Phase {
            case start
            /// Waiting for the claim's row: the key's `next_change_at`, if it is still due.
            case claimed
            /// Deriving the key at a boundary.
            case deriving(boundary: Int64, Derivation)
            /// A derivation's writes run: the next boundary its state passes by now, if any.
            case written(next: Int64?)
        }

        init(key: SubscriptionKey, now: Timestamp, targets: OutboxTargets, claim: StoreStatement) {
            self.key = key
            self.now = now
            self.targets = targets
            self.claim = claim
        }

        /// What the sweep wrote, and whether the key was still due (claimed).
        mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<(commit: FeedCommit, swept: Bool)> {
            var rows = rows
            while true {
                switch phase {
                case .start:
                    phase = .claimed
                    return .fetch(claim, LedgerRows.keyValues(key) + [.integer(now.millisecondsSince1970)])
                case .claimed:
                    guard let boundary = rows.first?[0].integer else { return .done((commit, false)) }
                    phase = .deriving(boundary: boundary, derivation(at: boundary))
                    rows = []
                case .written(let next):
                    guard let next, boundaries < maximumBoundaries else { return .done((commit, true)) }
                    phase = .deriving(boundary: next, derivation(at: next))
                    rows = []
                case .deriving(let boundary, var derivation):
                    let step = try derivation.next(rows)
                    phase = .deriving(boundary: boundary, derivation)
                    switch step {
                    case .fetch(let statement, let values):
                        return .fetch(statement, values)
                    case .write(let writes):
                        return .write(writes)
                    case .done(let plan):
                        boundaries += 1
                        commit.add(plan)
                        let next = plan.nextChangeAt[key].flatMap { $0 > boundary && $0 <= now.millisecondsSince1970 ? $0 : nil }
                        phase = .written(next: next)
                        return .write(plan.writes)
                    }
                }
            }
        }

        private func derivation(at boundary: Int64) -> Derivation {
            Derivation(
                keys: [key], at: Timestamp(millisecondsSince1970: boundary), cause: .sweep,
                recordedAt: now.millisecondsSince1970, targets: targets)
        }
    }

    // MARK: Deriving

    /// What one input or one sweep step writes to the feed: its events (with their ids drawn)
    /// and each key's derived state.
    struct Plan: Sendable {
        var writes: [StoreWrite] = []
        /// The events written, by id.
        var events: [(id: Int64, event: ChangeEvent)] = []
        /// Each key's `next_change_at` after the plan (the sweep continues from it).
        var nextChangeAt: [SubscriptionKey: Int64] = [:]
        /// How many outbox rows the plan writes.
        var outboxRows = 0
    }

    /// Derives the events of an input (or of the passing of time) for its keys, in the
    /// transaction that stores it, after its copies are folded and its customers linked: each
    /// key evaluated at `instant` (``LedgerRows/Evaluation``), compared with the state stored
    /// for it, the changes classified (``ChangeClassification``), and, when there are any, the
    /// key's customers read and the ids drawn. A handful of reads per key, whatever its history.
    struct Derivation: RowSteps {
        let keys: [SubscriptionKey]
        let instant: Timestamp
        let cause: ChangeCause
        /// When the server wrote it.
        let recordedAt: Int64
        /// Where each event is sent (its outbox rows, in the same transaction).
        let targets: OutboxTargets
        /// An input's bytes to forward to each of ``OutboxTargets/forwardURLs``, with the key they are
        /// ordered by: a verified notification, as Apple sent it.
        let forward: (body: [UInt8], orderingKey: String)?
        /// The consumption request the input is: its event follows its key's changes.
        let consumption: ConsumptionNotice?
        /// The copies the input stored in this transaction (``LedgerRows/Written``).
        let written: LedgerRows.Written
        private var phase = Phase.evaluating(0, nil)
        private var events: [ChangeEvent] = []
        private var plan = Plan()
        private var customers: [SubscriptionKey: [String]] = [:]

        private enum Phase {
            case evaluating(Int, LedgerRows.Evaluation?)
            case customers(Int)
            case ids
        }

        init(
            keys: [SubscriptionKey], at instant: Timestamp, cause: ChangeCause, recordedAt: Int64,
            targets: OutboxTargets, forward: (body: [UInt8], orderingKey: String)? = nil, consumption: ConsumptionNotice? = nil,
            written: LedgerRows.Written = LedgerRows.Written()
        ) {
            self.consumption = consumption
            self.written = written
            self.keys = keys
            self.instant = instant
            self.cause = cause
            self.recordedAt = recordedAt
            self.targets = targets
            self.forward = forward
        }

        /// The derivation of a new input: its keys evaluated at the instant it was received; a
        /// notification is forwarded. `written`: the copies folding it in stored.
        init(_ event: NewEvent, targets: OutboxTargets, written: LedgerRows.Written) {
            let key = event.orderedKeys.first.map(OutboxRows.orderingKey) ?? "notification"
            self.init(
                keys: event.orderedKeys, at: Timestamp(millisecondsSince1970: event.receivedAt), cause: event.cause,
                recordedAt: event.receivedAt, targets: targets, forward: event.kind == "notification" ? (event.raw, key) : nil,
                consumption: event.consumption, written: written)
        }

        mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Plan> {
            while true {
                switch phase {
                case .evaluating(let index, let running):
                    guard index < keys.count else {
                        phase = .customers(0)
                        continue
                    }
                    var evaluation = running ?? LedgerRows.Evaluation(key: keys[index], at: instant, written: written)
                    switch try evaluation.next(running == nil ? [] : rows) {
                    case .fetch(let statement, let values):
                        phase = .evaluating(index, evaluation)
                        return .fetch(statement, values)
                    case .write(let writes):
                        phase = .evaluating(index, evaluation)
                        return .write(writes)
                    case .done(let state):
                        derive(keys[index], state: state, head: evaluation.head)
                        phase = .evaluating(index + 1, nil)
                    }
                case .customers(let index):
                    let keysWithEvents = Array(Set(events.map(\.key))).sorted()
                    if index > 0 {
                        customers[keysWithEvents[index - 1]] = rows.compactMap { $0[0].text }.sorted()
                    }
                    guard index < keysWithEvents.count else {
                        guard !events.isEmpty else { return .done(finish()) }
                        phase = .ids
                        return .fetch(drawIds, [.integer(Int64(events.count))])
                    }
                    phase = .customers(index + 1)
                    return .fetch(customersOfKey, LedgerRows.keyValues(keysWithEvents[index]))
                case .ids:
                    guard let last = rows.first?[0].integer else { throw StoreError("feed_counter has no row") }
                    var id = last - Int64(events.count)
                    for var event in events {
                        id += 1
                        event.customerIds = customers[event.key] ?? []
                        plan.events.append((id, event))
                        let json = event.json(id: id)
                        plan.writes.append(StoreWrite(insertEvent, [
                            .integer(id), .text(event.type.rawValue), .integer(event.occurredAt.millisecondsSince1970),
                            .integer(recordedAt),
                        ] + LedgerRows.keyValues(event.key) + [.text(json)]))
                        if let url = targets.webhookURL {
                            plan.writes.append(OutboxRows.insertWrite(
                                kind: .webhook, target: url, orderingKey: OutboxRows.orderingKey(event.key), eventId: id,
                                body: Array(json.utf8), now: recordedAt, giveUpAt: recordedAt + targets.retryWindowMilliseconds))
                            plan.outboxRows += 1
                        }
                    }
                    return .done(finish())
                }
            }
        }

        /// The plan with the input's forwards.
        private mutating func finish() -> Plan {
            if let forward {
                for url in targets.forwardURLs {
                    plan.writes.append(OutboxRows.insertWrite(
                        kind: .forward, target: url, orderingKey: forward.orderingKey, eventId: nil, body: forward.body,
                        now: recordedAt, giveUpAt: recordedAt + targets.retryWindowMilliseconds))
                    plan.outboxRows += 1
                }
            }
            return plan
        }

        /// Compares a key's evaluated state with the one stored, plans its events and the write
        /// of its new derived state.
        private mutating func derive(_ key: SubscriptionKey, state: SubscriptionState?, head: LedgerRows.Head) {
            let stored = head.derived
            let current = state.map(DerivedState.init)
            let boundary = FeedRows.boundary(state, head: head, at: instant)
            let derived = Derived(state: current ?? stored.state, nextChangeAt: boundary)
            if let current {
                for type in ChangeClassification.changes(from: stored.state, to: current) {
                    events.append(ChangeEvent(
                        type: type, key: key, occurredAt: instant, customerIds: [], previousStatus: stored.state?.status,
                        state: state, cause: cause))
                }
            }
            if let consumption, consumption.key == key {
                events.append(ChangeEvent(
                    type: .consumptionRequested, key: key, occurredAt: instant, customerIds: [],
                    previousStatus: current?.status ?? stored.state?.status, state: state, cause: cause,
                    consumptionRequest: consumption.json))
                plan.writes.append(ConsumptionRows.insertWrite(consumption))
            }
            if let boundary { plan.nextChangeAt[key] = boundary }
            if derived != stored {
                plan.writes.append(derivedWrite(key, derived, at: instant.millisecondsSince1970))
            }
        }
    }

    /// When a key evaluated at `instant` is to be evaluated again without a new input: when its
    /// status may change by time alone (ReceiptKit's ``SubscriptionState/statusMayChangeAt``),
    /// or when a copy signed after `instant` (by a clock ahead of ours) counts.
    static func boundary(_ state: SubscriptionState?, head: LedgerRows.Head, at instant: Timestamp) -> Int64? {
        let later = head.lastKnownFrom.flatMap { $0 > instant.millisecondsSince1970 ? $0 : nil }
        return [state?.statusMayChangeAt?.millisecondsSince1970, later].compactMap { $0 }.min()
    }

    /// A key's derived state stored without events: what migration v8 does for every key a
    /// server before it stored, so that the first input after the upgrade is compared with the
    /// state it found, not with nothing.
    struct Baseline: RowSteps {
        let key: SubscriptionKey
        let instant: Timestamp
        private var evaluation: LedgerRows.Evaluation

        init(key: SubscriptionKey, at instant: Timestamp) {
            self.key = key
            self.instant = instant
            evaluation = LedgerRows.Evaluation(key: key, at: instant)
        }

        mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<StoreWrite> {
            switch try evaluation.next(rows) {
            case .fetch(let statement, let values):
                return .fetch(statement, values)
            case .write(let writes):
                return .write(writes)
            case .done(let state):
                let derived = Derived(
                    state: state.map(DerivedState.init), nextChangeAt: FeedRows.boundary(state, head: evaluation.head, at: instant))
                return .done(derivedWrite(key, derived, at: instant.millisecondsSince1970))
            }
        }
    }

    /// Every key, for ``Baseline``.
    static let allKeys = StoreStatement(
        "SELECT original_transaction_id, bundle_id, environment FROM subscriptions", columns: [.text, .text, .text])

    /// The keys of rows of ``dueKeys`` or ``allKeys``.
    static func keys(_ rows: [[StoreValue]]) -> [SubscriptionKey] {
        rows.map { row in
            SubscriptionKey(bundleId: row[1].text ?? "", environment: row[2].text ?? "", originalTransactionId: row[0].text ?? "")
        }
    }
}

/// Where the feed's events and the verified notifications are sent, each through the outbox.
public struct OutboxTargets: Sendable, Hashable {
    /// `RECEIPTKIT_WEBHOOK_URL`: each event, signed.
    public var webhookURL: String?
    /// `RECEIPTKIT_FORWARD_URLS`: each verified notification, byte for byte.
    public var forwardURLs: [String]
    /// How long a row is tried before it is dead-lettered (`RECEIPTKIT_WEBHOOK_RETRY_HOURS`).
    public var retryWindowMilliseconds: Int64

    /// Creates targets; none by default.
    public init(webhookURL: String? = nil, forwardURLs: [String] = [], retryWindowMilliseconds: Int64 = 72 * 3_600_000) {
        self.webhookURL = webhookURL
        self.forwardURLs = forwardURLs
        self.retryWindowMilliseconds = retryWindowMilliseconds
    }
}

/// One event of the feed as stored: its id and its JSON, exactly as served and delivered.
public struct FeedEvent: Sendable, Hashable {
    /// Its position in the feed.
    public var id: Int64
    /// ``ChangeEvent/json(id:)``.
    public var json: String
}

/// What a commit wrote to the feed, told to the server after the commit (metrics, and the
/// delivery worker's wake-up).
public struct FeedCommit: Sendable {
    /// The types of the events written, one per event.
    public var eventTypes: [String] = []
    /// How many outbox rows were written.
    public var outboxRows = 0

    var isEmpty: Bool { eventTypes.isEmpty && outboxRows == 0 }

    mutating func add(_ plan: FeedRows.Plan) {
        eventTypes += plan.events.map(\.event.type.rawValue)
        outboxRows += plan.outboxRows
    }

    mutating func merge(_ other: FeedCommit) {
        eventTypes += other.eventTypes
        outboxRows += other.outboxRows
    }
}
