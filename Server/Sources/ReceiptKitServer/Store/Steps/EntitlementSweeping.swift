import ReceiptKit

/// One due customer's named entitlements swept in its own transaction: its `next_change_at`
/// claimed (``EntitlementStatements/claimDueCustomer``: still due, and on PostgreSQL locked, or
/// skipped when another transaction holds it), then the customer derived at each instant its
/// entitlements may change, up to `now` (``EntitlementDerivation``), each derivation's writes run
/// before the next reads.
struct EntitlementSweeping: RowSteps, Sendable {
    /// What the sweep wrote, and whether the customer was still due (claimed).
    struct Result: Sendable {
        var commit = FeedCommit()
        var swept = false
    }

    let customerId: String
    let now: Timestamp
    let targets: OutboxTargets
    let catalog: EntitlementCatalog
    private var phase = Phase.start
    private var result = Result()
    private var boundaries = 0

    private enum Phase {
        case start
        case claimed
        case deriving(boundary: Int64, EntitlementDerivation)
        case written(next: Int64?)
    }

    init(customerId: String, now: Timestamp, targets: OutboxTargets, catalog: EntitlementCatalog) {
        self.customerId = customerId
        self.now = now
        self.targets = targets
        self.catalog = catalog
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        var rows = rows
        while true {
            switch phase {
            case .start:
                phase = .claimed
                return .fetch(EntitlementStatements.claimDueCustomer.fetch([.text(customerId), .integer(now.millisecondsSince1970)]))
            case .claimed:
                guard let boundary = try EntitlementStatements.claimDueCustomer.decodeFirst(rows) else { return .done(result) }
                result.swept = true
                phase = .deriving(boundary: boundary, derivation(at: boundary))
                rows = []
            case .written(let next):
                guard let next, boundaries < Sweeping.maximumBoundaries else { return .done(result) }
                phase = .deriving(boundary: next, derivation(at: next))
                rows = []
            case .deriving(let boundary, var derivation):
                switch try derivation.nested(rows, in: Result.self) {
                case .io(let io):
                    phase = .deriving(boundary: boundary, derivation)
                    return io
                case .done(let derived):
                    boundaries += 1
                    result.commit.merge(derived.commit)
                    let next = derived.nextChangeAt[customerId].flatMap { $0 > boundary && $0 <= now.millisecondsSince1970 ? $0 : nil }
                    phase = .written(next: next)
                    return .write(derived.writes)
                }
            }
        }
    }

    private func derivation(at boundary: Int64) -> EntitlementDerivation {
        EntitlementDerivation(
            customers: [customerId], at: Timestamp(millisecondsSince1970: boundary), cause: .sweep,
            recordedAt: now.millisecondsSince1970, targets: targets, catalog: catalog)
    }
}
