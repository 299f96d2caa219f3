import ReceiptKit

/// One due key swept in its own transaction: its `next_change_at` claimed
/// (``FeedStatements/claimDueKey``: still due, and on PostgreSQL locked, or skipped when another
/// transaction holds it), then the key derived at each boundary its state passes up to `now`,
/// each derivation's writes run before the next reads the state they leave.
struct Sweeping: RowSteps, Sendable {
    /// What the sweep wrote, and whether the key was still due (claimed).
    struct Result: Sendable {
        var commit = FeedCommit()
        var swept = false
    }

    let key: SubscriptionKey
    let now: Timestamp
    let targets: OutboxTargets
    private var phase = Phase.start
    private var result = Result()
    private var boundaries = 0

    /// The most boundaries one sweep of a key passes (a period, a grace period, a retry window:
    /// three follow one another at most).
    static let maximumBoundaries = 8

    private enum Phase {
        case start
        /// Waiting for the claim's row: the key's `next_change_at`, if it is still due.
        case claimed
        /// Deriving the key at a boundary.
        case deriving(boundary: Int64, Derivation)
        /// A derivation's writes run: the next boundary its state passes by now, if any.
        case written(next: Int64?)
    }

    init(key: SubscriptionKey, now: Timestamp, targets: OutboxTargets) {
        self.key = key
        self.now = now
        self.targets = targets
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        var rows = rows
        while true {
            switch phase {
            case .start:
                phase = .claimed
                return .fetch(FeedStatements.claimDueKey.fetch(LedgerStatements.key(key) + [.integer(now.millisecondsSince1970)]))
            case .claimed:
                guard let boundary = try FeedStatements.claimDueKey.decodeFirst(rows) else { return .done(result) }
                result.swept = true
                phase = .deriving(boundary: boundary, derivation(at: boundary))
                rows = []
            case .written(let next):
                guard let next, boundaries < Self.maximumBoundaries else { return .done(result) }
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
                    let next = derived.nextChangeAt[key].flatMap { $0 > boundary && $0 <= now.millisecondsSince1970 ? $0 : nil }
                    phase = .written(next: next)
                    return .write(derived.writes)
                }
            }
        }
    }

    private func derivation(at boundary: Int64) -> Derivation {
        Derivation(
            keys: [key], at: Timestamp(millisecondsSince1970: boundary), cause: .sweep, recordedAt: now.millisecondsSince1970,
            targets: targets)
    }
}
