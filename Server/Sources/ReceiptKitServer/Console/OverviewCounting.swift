import ReceiptKit

/// How many keys have each status and product now, per app and environment, in one snapshot: the
/// counts kept by the derivations (``CountStatements``), each due key (`next_change_at` passed,
/// the sweep not there yet) moved from what its row says to what ReceiptKit evaluates it to now
/// (``Evaluation``). No other key's status can have changed since its row was derived
/// (``SubscriptionState/statusMayChangeAt``), so the answer is exact, and its cost follows the
/// number of groups and of due keys, not of keys.
struct OverviewCounting: RowSteps, Sendable {
    let instant: Timestamp
    private var phase = Phase.start
    private var counts: [CountStatements.Delta: Int64] = [:]
    private var due: ArraySlice<CountStatements.DueKey> = []

    private enum Phase {
        case start, counts, due
        case evaluating(CountStatements.DueKey, Evaluation)
    }

    init(at instant: Timestamp) {
        self.instant = instant
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<[CountStatements.Count]> {
        var rows = rows
        while true {
            switch phase {
            case .start:
                phase = .counts
                return .fetch(CountStatements.counts.fetch())
            case .counts:
                for count in try CountStatements.counts.decode(rows) {
                    let group = CountStatements.Delta(
                        bundleId: count.bundleId, environment: count.environment, status: count.status, productId: count.productId)
                    counts[group, default: 0] += count.count
                }
                phase = .due
                return .fetch(CountStatements.dueKeys.fetch(["instant": .integer(instant.millisecondsSince1970)]))
            case .due:
                due = try CountStatements.dueKeys.decode(rows)[...]
                guard let first = due.popFirst() else { return .done(result()) }
                phase = .evaluating(first, Evaluation(key: first.key, at: instant))
                rows = []
            case .evaluating(let dueKey, var evaluation):
                switch try evaluation.nested(rows, in: [CountStatements.Count].self) {
                case .io(let io):
                    phase = .evaluating(dueKey, evaluation)
                    return io
                case .done(let state):
                    move(dueKey, to: state)
                    guard let next = due.popFirst() else { return .done(result()) }
                    phase = .evaluating(next, Evaluation(key: next.key, at: instant))
                    rows = []
                }
            }
        }
    }

    /// Takes a due key out of the count its row is in, and into the one its state now says.
    private mutating func move(_ dueKey: CountStatements.DueKey, to state: SubscriptionState?) {
        let key = dueKey.key
        if let status = dueKey.status {
            counts[CountStatements.Delta(
                bundleId: key.bundleId, environment: key.environment, status: status, productId: dueKey.productId ?? ""), default: 0] -= 1
        }
        if let state {
            counts[CountStatements.Delta(
                bundleId: key.bundleId, environment: key.environment, status: state.status.rawValue,
                productId: state.productId ?? ""), default: 0] += 1
        }
    }

    private func result() -> [CountStatements.Count] {
        counts.filter { $0.value != 0 }.sorted { $0.key < $1.key }.map { group, count in
            CountStatements.Count(
                bundleId: group.bundleId, environment: group.environment, status: group.status, productId: group.productId, count: count)
        }
    }
}
