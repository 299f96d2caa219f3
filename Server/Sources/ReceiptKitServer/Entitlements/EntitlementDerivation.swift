import ReceiptKit

/// Customers' named entitlements after an input, a grant or the passing of time, in the
/// transaction that causes the change: for each customer, its keys and grants read in one
/// statement (``EntitlementStatements/sourcesOfCustomer``), the keys whose product an entitlement
/// names (or whose product is not derived yet) evaluated at the instant (``Evaluation``), ReceiptKit's rules applied
/// (``EntitlementCatalog/entitlements(of:at:grants:bundleId:)``), and the result compared with
/// what the feed last told (`customer_entitlements`): each entitlement that became active or
/// inactive is an event, written with its outbox row (ordered by customer), and the customer's
/// next look by the sweep is scheduled (`entitlement_checks`). The feed's ids are drawn last, as
/// ``Derivation`` draws them, and only when there are events.
struct EntitlementDerivation: RowSteps, Sendable {
    /// What the derivation writes, and what it tells the server after the commit.
    struct Result: Sendable {
        var writes: [StoreWrite] = []
        var commit = FeedCommit()
        /// Each customer's next look by the sweep, when time alone may change its entitlements.
        var nextChangeAt: [String: Int64] = [:]
    }

    /// The customers, sorted, once known.
    private(set) var customers: [String]
    /// Keys whose customers are derived (an input's), read first.
    let keysOfCustomers: [SubscriptionKey]
    let instant: Timestamp
    let cause: EventCause
    let recordedAt: Int64
    let targets: OutboxTargets
    let catalog: EntitlementCatalog
    /// The copies the running transaction stored.
    let written: WrittenCopies
    private var phase = Phase.customersOfKey(0)
    private var events: [EntitlementEvent] = []
    private var result = Result()

    /// Where one customer's derivation stands.
    private struct Customer: Sendable {
        var keys: [SubscriptionKey] = []
        var states: [SubscriptionState] = []
        var grants: [EntitlementGrant] = []
    }

    private enum Phase {
        /// Reading the customers of ``keysOfCustomers``.
        case customersOfKey(Int)
        /// About to read the keys of a customer.
        case keys(Int)
        /// A customer's keys read.
        case keyed(Int)
        case evaluating(Int, Customer, Int, Evaluation?)
        case told(Int, Customer)
        case ids
    }

    init(
        customers: some Sequence<String>, at instant: Timestamp, cause: EventCause, recordedAt: Int64, targets: OutboxTargets,
        catalog: EntitlementCatalog, written: WrittenCopies = WrittenCopies(), customersOf keys: [SubscriptionKey] = []
    ) {
        self.customers = Set(customers).sorted()
        keysOfCustomers = keys
        self.instant = instant
        self.cause = cause
        self.recordedAt = recordedAt
        self.targets = targets
        self.catalog = catalog
        self.written = written
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        var rows = rows
        while true {
            switch phase {
            case .customersOfKey(let index):
                if index > 0 {
                    customers = Array(Set(customers + (try LedgerStatements.customersOfKey.decode(rows)))).sorted()
                }
                guard index < keysOfCustomers.count else {
                    phase = .keys(0)
                    rows = []
                    continue
                }
                phase = .customersOfKey(index + 1)
                return .fetch(LedgerStatements.customersOfKey.fetch(LedgerStatements.key(keysOfCustomers[index])))
            case .keys(let index):
                guard index < customers.count else {
                    guard !events.isEmpty else { return .done(result) }
                    phase = .ids
                    return .fetch(FeedStatements.drawIds.fetch(["count": .integer(Int64(events.count))]))
                }
                phase = .keyed(index)
                return .fetch(EntitlementStatements.sourcesOfCustomer.fetch(["customer_id": .text(customers[index])]))
            case .keyed(let index):
                let sources = EntitlementStatements.split(try EntitlementStatements.sourcesOfCustomer.decode(rows), namedProductsOf: catalog)
                phase = .evaluating(index, Customer(keys: sources.keys, grants: sources.grants.map(\.grant)), 0, nil)
                rows = []
            case .evaluating(let index, var customer, let keyIndex, let running):
                guard keyIndex < customer.keys.count else {
                    phase = .told(index, customer)
                    return .fetch(EntitlementStatements.toldOfCustomer.fetch(["customer_id": .text(customers[index])]))
                }
                var evaluation = running ?? Evaluation(key: customer.keys[keyIndex], at: instant, written: written)
                switch try evaluation.nested(running == nil ? [] : rows, in: Result.self) {
                case .io(let io):
                    phase = .evaluating(index, customer, keyIndex, evaluation)
                    return io
                case .done(let state):
                    if let state { customer.states.append(state) }
                    phase = .evaluating(index, customer, keyIndex + 1, nil)
                    rows = []
                }
            case .told(let index, let customer):
                let told = Dictionary(try EntitlementStatements.toldOfCustomer.decode(rows).map { ($0.name, $0.active) }) { $1 }
                derive(customers[index], customer, told: told)
                phase = .keys(index + 1)
                rows = []
            case .ids:
                guard let last = try FeedStatements.drawIds.decodeFirst(rows) else { throw StoreError.damaged("feed_counter has no row") }
                var id = last - Int64(events.count)
                for event in events {
                    id += 1
                    let json = try event.json(id: id)
                    result.writes.append(event.write(id: id, json: json, recordedAt: recordedAt))
                    result.commit.events.append((event.type.rawValue, event.bundleId, event.environment))
                    if let row = targets.webhookRow(eventId: id, json: json, customerId: event.customerId, environment: event.entitlement.key?.environment, at: recordedAt) {
                        result.writes.append(OutboxStatements.write(row))
                        result.commit.outboxRows += 1
                    }
                }
                return .done(result)
            }
        }
    }

    /// Applies the rules to one customer and takes the changes: an event for each entitlement
    /// whose activity differs from what the feed told (none for one never active), what the feed
    /// tells now, and the customer's next look.
    private mutating func derive(_ customerId: String, _ customer: Customer, told: [String: Bool]) {
        let entitlements = catalog.entitlements(of: customer.states, at: instant, grants: customer.grants)
        for entitlement in entitlements where (told[entitlement.name] ?? false) != entitlement.isActive {
            events.append(EntitlementEvent(customerId: customerId, entitlement: entitlement, cause: cause))
            result.writes.append(EntitlementStatements.toldWrite(customerId: customerId, name: entitlement.name, active: entitlement.isActive))
        }
        let next = entitlements.compactMap(\.mayChangeAt).min()?.millisecondsSince1970
        result.nextChangeAt[customerId] = next
        result.writes.append(EntitlementStatements.checkWrite(customerId: customerId, at: next))
    }
}

extension Sweeping where Derive == EntitlementDerivation {
    /// One due customer's named entitlements (``EntitlementStatements/claimDueCustomer``).
    init(customerId: String, now: Timestamp, targets: OutboxTargets, catalog: EntitlementCatalog) {
        claim = EntitlementStatements.claimDueCustomer.fetch(["customer_id": .text(customerId), "now": .integer(now.millisecondsSince1970)])
        decodeClaim = { try EntitlementStatements.claimDueCustomer.decodeFirst($0) }
        self.now = now
        derivation = { boundary in
            EntitlementDerivation(
                customers: [customerId], at: Timestamp(millisecondsSince1970: boundary), cause: .sweep,
                recordedAt: now.millisecondsSince1970, targets: targets, catalog: catalog)
        }
        outcome = { ($0.writes, $0.commit, $0.nextChangeAt[customerId]) }
    }
}
