import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKitServer
import Testing

/// `RECEIPTKIT_FORWARD_URLS`: every notification that verified is POSTed to each URL exactly as
/// Apple sent it, through the outbox; nothing that failed verification, and a replay not again.
@Suite("Forwarding Apple's notifications")
struct ForwardingTests {
    @Test("each verified notification reaches every forward URL byte for byte, once; a forged or foreign one reaches none",
          arguments: Backend.available)
    func forwards(backend: Backend) async throws {
        let first = try WebhookReceiver()
        let second = try WebhookReceiver()
        first.answer(next: [.status(503)])  // the first attempt fails: forwards are retried too
        let p = try Payloads()
        let t0 = ms("2025-06-01T12:00:00Z")
        let transaction = try p.transaction(id: "7951", original: "7951", purchase: t0, expires: t0 + 30 * day, signed: t0)
        let subscribed = try p.notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: t0, transaction: transaction, renewalInfo: nil)
        let renewal = try p.notification(
            type: "DID_RENEW", signed: t0 + 30 * day,
            transaction: p.transaction(id: "7952", original: "7951", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day),
            renewalInfo: nil)
        let test = try p.notification(type: "TEST", signed: t0, transaction: nil, renewalInfo: nil)
        // Sent last, once the three have arrived: see below.
        let sentinel = Vectors.body(wrapping: try p.notification(type: "TEST", signed: t0, transaction: nil, renewalInfo: nil))
        // As Apple might format it: spaces and a newline, which a re-encoding would lose.
        let bodies = [
            "{ \"signedPayload\" : \"\(subscribed)\" }\n", Vectors.body(wrapping: renewal), Vectors.body(wrapping: test),
        ]
        // A payload whose signature does not verify, and one for another app.
        var forged = Array(renewal.utf8)
        forged[forged.count - 5] = forged[forged.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let other = try TestSigner.standard().sign(
            #"{"notificationType":"TEST","notificationUUID":"\#(UUID().uuidString.lowercased())","version":"2.0","signedDate":\#(t0),"data":{"bundleId":"com.example.other","environment":"Sandbox","appAppleId":1234567890}}"#)
        let refused = [Vectors.body(wrapping: String(decoding: forged, as: UTF8.self)), Vectors.body(wrapping: other)]
        try await first.run {
            try await second.run {
                try await TestServer.run(backend, clock: { Date() }, configure: { configuration in
                    configuration.events.sweepInterval = .seconds(3600)
                    configuration.events.forwardURLs = [first.url, second.url]
                    // One attempt at a time: the sentinel below is claimed only once none runs.
                    configuration.events.delivery = DeliveryPolicy(
                        firstRetry: .milliseconds(50), maximumWait: .milliseconds(200), timeout: .seconds(5), concurrency: 1,
                        pollInterval: .milliseconds(50))
                }) { server in
                    for body in refused {
                        let answer = try await server.post("/appstore/notifications", body, token: nil)
                        #expect(answer.status == .badRequest, "\(answer.text)")
                    }
                    for body in bodies + bodies {  // each twice: the replay is not forwarded again
                        let answer = try await server.post("/appstore/notifications", body, token: nil)
                        #expect(answer.status == .ok, "\(answer.text)")
                    }
                    try await waitUntil("both receivers have the three notifications") {
                        first.accepted.count >= 3 && second.accepted.count >= 3
                    }
                    // A duplicate would be an outbox row written by a replay, or a row sent again. The
                    // sentinel's rows are the outbox's newest; with one attempt at a time, the
                    // server claims one only when no attempt of its runs and no earlier row is due:
                    // once the sentinel has arrived, every attempt at an earlier row has ended.
                    #expect(try await server.post("/appstore/notifications", sentinel, token: nil).status == .ok)
                    try await waitUntil("both receivers have the sentinel") {
                        first.accepted.contains { $0.body == Array(sentinel.utf8) } && second.accepted.contains { $0.body == Array(sentinel.utf8) }
                    }
                    let isSentinel = { (request: WebhookReceiver.Received) in request.body == Array(sentinel.utf8) }
                    for receiver in [first, second] {
                        // Each once, byte for byte (the order holds per subscription only).
                        let received = receiver.accepted.filter { !isSentinel($0) }.map(\.body).sorted { $0.lexicographicallyPrecedes($1) }
                        let sent = bodies.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
                        #expect(received == sent, "\(received.map(\.count)) bytes received, \(sent.map(\.count)) sent")
                        #expect(receiver.accepted.allSatisfy { $0.headers["content-type"] == "application/json" })
                        // Apple's JWS is the proof: no ReceiptKit event id or signature is added.
                        #expect(receiver.accepted.allSatisfy { $0.headers["receiptkit-signature"] == nil })
                    }
                    #expect(first.received.filter { !isSentinel($0) }.count == 4 && first.received.first?.status == 503)
                    #expect(second.received.filter { !isSentinel($0) }.count == 3)
                    // The three and the sentinel, to each receiver. The sentinel's rows are the last
                    // pending ones, recorded delivered once their receivers have answered.
                    try await server.waitUntilDeliveries("the sentinel's rows are recorded delivered") { $0.isEmpty }
                    let delivered = try await server.deliveries(state: "delivered")
                    #expect(delivered.count == 8 && delivered.allSatisfy { $0["kind"] as? String == "forward" && $0["event_id"] is NSNull })
                    let metrics = try await server.get("/metrics").text
                    #expect(metrics.contains(#"receiptkit_deliveries_total{destination="forward:127.0.0.1:\#(first.port)",outcome="delivered"} 4"#))
                }
            }
        }
    }
}
