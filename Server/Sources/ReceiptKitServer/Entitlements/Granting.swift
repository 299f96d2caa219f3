import ReceiptKit

/// A grant made or ended by hand, and the customer's named entitlements derived after it, in
/// one transaction: an end is written only to a grant of the customer not ended yet.
struct Granting: RowSteps, Sendable {
    enum Change: Sendable {
        case make(StoredGrant)
        case end(grantId: String, at: Int64, by: String)
    }

    let customerId: String
    let change: Change
    let instant: Timestamp
    let targets: OutboxTargets
    let catalog: EntitlementCatalog
    private var phase = Phase.start
    private var grant: StoredGrant?
    private var commit = FeedCommit()

    private enum Phase {
        case start, read, written
        case deriving(EntitlementDerivation)
        case finished
    }

    init(customerId: String, change: Change, at instant: Timestamp, targets: OutboxTargets, catalog: EntitlementCatalog) {
        self.customerId = customerId
        self.change = change
        self.instant = instant
        self.targets = targets
        self.catalog = catalog
    }

    /// The grant as stored after the change (`nil`: the customer has no grant with that id), and
    /// what the commit wrote to the feed.
    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<(grant: StoredGrant?, commit: FeedCommit)> {
        var rows = rows
        while true {
            switch phase {
            case .start:
                switch change {
                case .make(let grant):
                    self.grant = grant
                    phase = .written
                    return .write([EntitlementStatements.grantWrite(grant)])
                case .end(let grantId, _, _):
                    phase = .read
                    return .fetch(EntitlementStatements.grant.fetch(["customer_id": .text(customerId), "grant_id": .text(grantId)]))
                }
            case .read:
                guard let stored = try EntitlementStatements.grant.decodeFirst(rows), case .end(let grantId, let at, let by) = change else {
                    return .done((nil, commit))
                }
                guard stored.endedAt == nil else { return .done((stored, commit)) }
                var ended = stored
                ended.endedAt = at
                ended.endedBy = by
                grant = ended
                phase = .written
                return .write([StoreWrite(
                    EntitlementStatements.endGrant,
                    ["ended_at": .integer(at), "ended_by": .text(by), "customer_id": .text(customerId), "grant_id": .text(grantId)])])
            case .written:
                phase = .deriving(EntitlementDerivation(
                    customers: [customerId], at: instant, cause: EventCause(source: .grant), recordedAt: instant.millisecondsSince1970,
                    targets: targets, catalog: catalog))
                rows = []
            case .deriving(var derivation):
                switch try derivation.nested(rows, in: (grant: StoredGrant?, commit: FeedCommit).self) {
                case .io(let io):
                    phase = .deriving(derivation)
                    return io
                case .done(let derived):
                    commit = derived.commit
                    phase = .finished
                    if !derived.writes.isEmpty { return .write(derived.writes) }
                    rows = []
                }
            case .finished:
                return .done((grant, commit))
            }
        }
    }
}
