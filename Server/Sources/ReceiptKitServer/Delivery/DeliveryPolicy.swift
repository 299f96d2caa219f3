import ServerSupport

/// How the outbox is sent: how long an attempt may take, how many run at once, and when a failed
/// one is tried again — exponential back-off with jitter, about a second first, doubling, each
/// wait at most ten minutes, until the row's time (`RECEIPTKIT_WEBHOOK_RETRY_HOURS`) runs out.
public struct DeliveryPolicy: Sendable, Hashable {
    /// The wait after the first failed attempt (1 s). Tests shorten it; no variable sets it.
    public var firstRetry: Duration
    /// The longest wait between two attempts (10 minutes).
    public var maximumWait: Duration
    /// Each wait is made shorter or longer by up to this fraction, at random (0.2): receivers
    /// that failed together are not all tried again at the same instant.
    public var jitter: Double
    /// How long one attempt may take, connecting and reading the answer included
    /// (`RECEIPTKIT_WEBHOOK_TIMEOUT`, 10 s).
    public var timeout: Duration
    /// How many attempts run at once, per server (8): a slow receiver holds at most these.
    public var concurrency: Int
    /// How often a server looks for rows another server wrote or whose wait ended (1 s); rows
    /// this server writes wake it at once.
    public var pollInterval: Duration
    /// How long a delivered row is kept — listed with `state=delivered`, sent again on request —
    /// before it is removed (a week).
    public var keepDelivered: Duration

    /// Creates a policy; the defaults are production's.
    public init(
        firstRetry: Duration = .seconds(1), maximumWait: Duration = .seconds(600), jitter: Double = 0.2,
        timeout: Duration = .seconds(10), concurrency: Int = 8, pollInterval: Duration = .seconds(1),
        keepDelivered: Duration = .seconds(7 * 86_400)
    ) {
        self.keepDelivered = keepDelivered
        self.firstRetry = firstRetry
        self.maximumWait = maximumWait
        self.jitter = jitter
        self.timeout = timeout
        self.concurrency = concurrency
        self.pollInterval = pollInterval
    }

    /// How long a claimed row stays this server's: an attempt's timeout and a margin. A server
    /// that dies mid-attempt leaves the row to be sent again once this has passed.
    var lease: Duration { timeout + .seconds(5) }

    /// The wait after the `attempts`-th failed attempt (1, 2, …): `firstRetry · 2^(attempts-1)`,
    /// at most ``maximumWait``, times `1 + jitter · (2·random - 1)`, never more than
    /// ``maximumWait``.
    ///
    /// - Parameter random: A number in `0..<1`.
    package func wait(afterAttempt attempts: Int, random: Double) -> Duration {
        let first = firstRetry.wholeMilliseconds
        let maximum = maximumWait.wholeMilliseconds
        var base = first
        for _ in 1..<max(1, attempts) {
            base *= 2
            if base >= maximum { break }
        }
        let jittered = Double(min(base, maximum)) * (1 + jitter * (2 * random - 1))
        return .milliseconds(max(0, min(maximum, Int64(jittered.rounded()))))
    }

    /// The outcome to record for an attempt that failed at `now`: pending again after
    /// ``wait(afterAttempt:random:)``, or failed (a dead letter) when that would pass `giveUpAt`.
    package func afterFailure(
        attempts: Int, now: Int64, giveUpAt: Int64, random: Double, status: Int?, error: String
    ) -> DeliveryOutcome {
        let next = now + wait(afterAttempt: attempts, random: random).wholeMilliseconds
        return DeliveryOutcome(
            state: next > giveUpAt ? .failed : .pending, nextAttemptAt: next, attemptedAt: now, status: status, error: error)
    }
}
