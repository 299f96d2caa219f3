import ReceiptKit

/// One due thing swept in its own transaction — a key (the feed's `Derivation`) or a customer's
/// named entitlements (`EntitlementDerivation`), each made by its feature: its `next_change_at` claimed (still due, and on
/// PostgreSQL locked, or skipped when another transaction holds it), then derived at each boundary
/// its state passes up to `now`, each derivation's writes run before the next reads the state
/// they leave.
struct Sweeping<Derive: RowSteps & Sendable>: RowSteps, Sendable {
    /// What the sweep wrote, and whether the thing was still due (claimed).
    struct Result: Sendable {
        var commit = FeedCommit()
        var swept = false
    }

    /// What one derivation left: its writes, what it tells after the commit, and the next
    /// boundary of the thing swept, if any.
    typealias Outcome = (writes: [StoreWrite], commit: FeedCommit, next: Int64?)

    /// The claim: a query whose one row, when still due, is the thing's `next_change_at`.
    let claim: Fetch
    let decodeClaim: @Sendable ([[StoreValue]]) throws -> Int64?
    let now: Timestamp
    let derivation: @Sendable (Int64) -> Derive
    let outcome: @Sendable (Derive.Result) -> Outcome
    private var phase = Phase.start
    private var result = Result()
    private var boundaries = 0

    private enum Phase {
        case start
        /// Waiting for the claim's row: the `next_change_at`, if it is still due.
        case claimed
        /// Deriving at a boundary.
        case deriving(boundary: Int64, Derive)
        /// A derivation's writes run: the next boundary its state passes by now, if any.
        case written(next: Int64?)
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        var rows = rows
        while true {
            switch phase {
            case .start:
                phase = .claimed
                return .fetch(claim)
            case .claimed:
                guard let boundary = try decodeClaim(rows) else { return .done(result) }
                result.swept = true
                phase = .deriving(boundary: boundary, derivation(boundary))
                rows = []
            case .written(let next):
                guard let next, boundaries < sweepingMaximumBoundaries else { return .done(result) }
                phase = .deriving(boundary: next, derivation(next))
                rows = []
            case .deriving(let boundary, var derivation):
                switch try derivation.nested(rows, in: Result.self) {
                case .io(let io):
                    phase = .deriving(boundary: boundary, derivation)
                    return io
                case .done(let derived):
                    boundaries += 1
                    let outcome = outcome(derived)
                    result.commit.merge(outcome.commit)
                    phase = .written(next: outcome.next.flatMap { $0 > boundary && $0 <= now.millisecondsSince1970 ? $0 : nil })
                    return .write(outcome.writes)
                }
            }
        }
    }
}

/// The most boundaries one sweep of a key or a customer passes (a period, a grace period, a
/// retry window: three follow one another at most; a customer's passes and grants add a few).
private let sweepingMaximumBoundaries = 8

/// What one sweep did (the feed's keys, or the customers' named entitlements).
package struct SweepReport: Sendable, Hashable {
    /// Keys whose `next_change_at` had passed.
    package var due = 0
    /// Of those, the keys this sweep derived (not taken by another server, not moved on since).
    package var swept = 0
    /// Events written.
    package var events = 0

    /// Creates a report.
    package init(due: Int = 0, swept: Int = 0, events: Int = 0) {
        self.due = due
        self.swept = swept
        self.events = events
    }
}
