import Foundation

/// How the server tells backends what changed: how often time-caused changes are looked for.
///
/// Read from `RECEIPTKIT_SWEEP_INTERVAL` (seconds, default 60).
public struct EventSettings: Sendable {
    /// How often the keys whose state time may have changed are evaluated again
    /// (``SweepService``): an expiry with no notification is in the feed at most this late.
    public var sweepInterval: Duration

    /// Creates settings.
    public init(sweepInterval: Duration = .seconds(60)) {
        self.sweepInterval = sweepInterval
    }

    /// The settings the environment names.
    ///
    /// - Throws: ``ConfigurationError`` naming a variable whose value is wrong.
    static func read(_ variables: EnvironmentVariables) throws(ConfigurationError) -> EventSettings {
        var settings = EventSettings()
        if let interval = try variables.seconds("RECEIPTKIT_SWEEP_INTERVAL") { settings.sweepInterval = interval }
        return settings
    }
}
