import CoreMetrics
import Foundation
import Metrics
import Prometheus
import Synchronization
import ServerSupport

/// The server's metrics, through swift-metrics with a Prometheus registry of the application's
/// own (not the process-wide `MetricsSystem`, so that several applications in one test process
/// count apart). Labels are small fixed sets: route templates, methods, statuses, error codes,
/// Apple's notification types, the apps and environments served.
///
/// - `receiptkit_http_requests_total{route, method, status}`
/// - `receiptkit_http_request_duration_seconds{route}` (histogram)
/// - `receiptkit_verifications_total{result, bundle_id, environment}`: `verified` or ReceiptKit's
///   error code (`-` for the app and environment of an input refused)
/// - `receiptkit_notifications_total{type, bundle_id, environment}`: verified notifications by
///   `notificationType`
/// - `receiptkit_appstore_api_calls_total{endpoint, status, result, bundle_id, environment}`:
///   calls to the App Store Server API, by Apple's HTTP status (of the last attempt, after the
///   client's retries; `none` when no answer came) and the outcome (`ok` or the client's error
///   code)
/// - `receiptkit_reconcile_rejected_total{code, bundle_id, environment}`: items Apple answered
///   that failed verification (never stored)
/// - `receiptkit_reconcile_recovered_total{bundle_id, environment}`: notifications
///   reconciliation stored that the notification endpoint had not
/// - `receiptkit_reconcile_lag_seconds{bundle_id, environment}`: how far a reconcile cursor is
///   behind now
/// - `receiptkit_feed_events_total{type, bundle_id, environment}`: events written to the feed
/// - `receiptkit_retention_requests_total{result, bundle_id, environment}`: Get Retention Message
///   requests by the answer's kind (`message`, `alternate_product`, `promotional_offer`,
///   `default_message`, `none`) or the code that refused them (`-` for the app and environment
///   of a request refused)
/// - `receiptkit_deliveries_total{destination, outcome}`: outbox attempts by destination
///   (`webhook`, `forward:HOST[:PORT]`, `apple`) and outcome (`delivered`, `retried`,
///   `dead_lettered`)
/// - `receiptkit_outbox_pending{destination}`: rows waiting to be delivered
/// - `receiptkit_outbox_oldest_pending_seconds{destination}`: the age of the oldest of them
final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    /// The handles made so far, by label and label values: making one asks the registry, which
    /// validates the name and takes its lock, for every request.
    private let counters = Mutex<[String: Metrics.Counter]>([:])
    private let timers = Mutex<[String: Metrics.Timer]>([:])

    init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
        ]
        self.factory = factory
    }

    func request(route: String, method: String, status: Int, duration: Duration) {
        counter("receiptkit_http_requests_total", [("route", route), ("method", method), ("status", String(status))])
            .increment()
        let timer = handle(in: timers, "receiptkit_http_request_duration_seconds", [("route", route)]) {
            Metrics.Timer(label: $0, dimensions: $1, factory: factory)
        }
        timer.recordNanoseconds(duration.wholeNanoseconds)
    }

    /// A verification's result; the app and environment of a verified input (`-` for one refused:
    /// what it claims is not established).
    func verification(result: String, bundleId: String = "-", environment: String = "-") {
        counter("receiptkit_verifications_total", [("result", result), ("bundle_id", bundleId), ("environment", environment)])
            .increment()
    }

    func notification(type: String, bundleId: String, environment: String) {
        counter("receiptkit_notifications_total", [("type", type), ("bundle_id", bundleId), ("environment", environment)]).increment()
    }

    func appStoreCall(endpoint: String, status: Int?, result: String, bundleId: String, environment: String) {
        counter(
            "receiptkit_appstore_api_calls_total",
            [
                ("endpoint", endpoint), ("status", status.map(String.init) ?? "none"), ("result", result), ("bundle_id", bundleId),
                ("environment", environment),
            ]
        ).increment()
    }

    func reconcileRejected(code: String, bundleId: String, environment: String) {
        counter("receiptkit_reconcile_rejected_total", [("code", code), ("bundle_id", bundleId), ("environment", environment)])
            .increment()
    }

    func reconcileRecovered(_ count: Int, bundleId: String, environment: String) {
        counter("receiptkit_reconcile_recovered_total", [("bundle_id", bundleId), ("environment", environment)]).increment(by: count)
    }

    func reconcileLag(seconds: Double, bundleId: String, environment: String) {
        Gauge(
            label: "receiptkit_reconcile_lag_seconds", dimensions: [("bundle_id", bundleId), ("environment", environment)],
            factory: factory
        ).record(seconds)
    }

    func feedEvent(type: String, bundleId: String, environment: String) {
        counter("receiptkit_feed_events_total", [("type", type), ("bundle_id", bundleId), ("environment", environment)]).increment()
    }

    func retentionRequest(result: String, bundleId: String = "-", environment: String = "-") {
        counter("receiptkit_retention_requests_total", [("result", result), ("bundle_id", bundleId), ("environment", environment)])
            .increment()
    }

    func delivery(destination: String, outcome: String) {
        counter("receiptkit_deliveries_total", [("destination", destination), ("outcome", outcome)]).increment()
    }

    func outbox(destination: String, pending: Int, oldestPendingSeconds: Double) {
        Gauge(label: "receiptkit_outbox_pending", dimensions: [("destination", destination)], factory: factory).record(pending)
        Gauge(label: "receiptkit_outbox_oldest_pending_seconds", dimensions: [("destination", destination)], factory: factory)
            .record(oldestPendingSeconds)
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> Metrics.Counter {
        handle(in: counters, label, dimensions) { Metrics.Counter(label: $0, dimensions: $1, factory: factory) }
    }

    /// The handle for a label and its dimensions, made once. Two threads may both make a new one;
    /// the registry gives both the same metric.
    private func handle<Handle: Sendable>(
        in handles: borrowing Mutex<[String: Handle]>, _ label: String, _ dimensions: [(String, String)],
        make: (String, [(String, String)]) -> Handle
    ) -> Handle {
        var key = label
        for (_, value) in dimensions {
            key.append("\u{0}")
            key.append(value)
        }
        if let handle = handles.withLock({ $0[key] }) { return handle }
        let handle = make(label, dimensions)
        handles.withLock { $0[key] = handle }
        return handle
    }

    /// The Prometheus text exposition.
    func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }
}
