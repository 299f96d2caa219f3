import CoreMetrics
import Foundation
import Metrics
import Prometheus

/// The server's metrics, through swift-metrics with a Prometheus registry of the application's
/// own (not the process-wide `MetricsSystem`, so that several applications in one test process
/// count apart). Labels are small fixed sets: route templates, methods, statuses, error codes,
/// Apple's notification types.
///
/// - `receiptkit_http_requests_total{route, method, status}`
/// - `receiptkit_http_request_duration_seconds{route}` (histogram)
/// - `receiptkit_verifications_total{result}`: `verified` or ReceiptKit's error code
/// - `receiptkit_notifications_total{type}`: verified notifications by `notificationType`
final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

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
        Counter(
            label: "receiptkit_http_requests_total",
            dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory
        ).increment()
        Metrics.Timer(label: "receiptkit_http_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            .recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    func verification(result: String) {
        Counter(label: "receiptkit_verifications_total", dimensions: [("result", result)], factory: factory).increment()
    }

    func notification(type: String) {
        Counter(label: "receiptkit_notifications_total", dimensions: [("type", type)], factory: factory).increment()
    }

    /// The Prometheus text exposition.
    func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }
}
