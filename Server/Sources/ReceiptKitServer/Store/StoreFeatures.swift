import ReceiptKit

/// The rules of the features above the store that its own operations run, given to the store at
/// construction: what recording an input derives in its transaction (the feed's events, their
/// outbox rows, the customers' named entitlements), and whom to tell what a commit wrote.
///
/// The store declares what it needs and the features implement it (the server's is the feed's
/// `RecordingFeatures`), so that the store depends on none of them. The store keeps it for the
/// features' operations to read back (``StoreFeatures/setting(_:)``).
protocol StoreFeatures: Sendable {
    /// The steps that derive what a new input changed, run in its transaction after its copies
    /// are folded in and its customers linked: the feed's events, their outbox rows and each
    /// key's derived record, the consumption request the input is, the overview's counts.
    ///
    /// - Parameters:
    ///   - input: The input, new.
    ///   - written: The copies it stored in this transaction.
    func derivation(of input: VerifiedInput, written: WrittenCopies) -> any RowSteps<DerivedWrites> & Sendable

    /// The steps that derive the named entitlements of an input's customers, new input or replay,
    /// run last in its transaction; `nil` when the server has no named entitlements.
    ///
    /// - Parameters:
    ///   - input: The input.
    ///   - customersOf: Keys whose customers are derived too (a new input's keys).
    ///   - written: The copies it stored in this transaction.
    func entitlementDerivation(
        of input: VerifiedInput, customersOf keys: [SubscriptionKey], written: WrittenCopies
    ) -> (any RowSteps<DerivedWrites> & Sendable)?

    /// Tells the server what a commit wrote (metrics, the delivery worker's wake-up); called only
    /// after the commit.
    func tell(_ commit: FeedCommit)

    /// The setting of this type the features were given, if any: each feature reads its own
    /// (the outbox's targets, the entitlements file) without the store knowing it.
    func setting<Setting>(_ type: Setting.Type) -> Setting?
}

/// What a derivation run inside another step writes, and what it tells the server after the
/// commit.
struct DerivedWrites: Sendable {
    /// The writes, run in order.
    var writes: [StoreWrite]
    /// What they add to the feed and the outbox.
    var commit: FeedCommit
}

/// Steps whose result is mapped to another as they finish: a feature's derivation given to the
/// store as the ``DerivedWrites`` it needs.
struct MappedSteps<Base: RowSteps & Sendable, Result>: RowSteps, Sendable {
    private var base: Base
    private let transform: @Sendable (Base.Result) -> Result

    /// Runs `base`, then maps its result with `transform`.
    init(_ base: Base, _ transform: @escaping @Sendable (Base.Result) -> Result) {
        self.base = base
        self.transform = transform
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result> {
        switch try base.nested(rows, in: Result.self) {
        case .io(let io): io
        case .done(let result): .done(transform(result))
        }
    }
}
