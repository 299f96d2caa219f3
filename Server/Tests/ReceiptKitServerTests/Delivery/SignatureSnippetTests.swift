import Foundation
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import ReceiptKitServer
import Testing

/// The signature checks of `docs/events.md`, run as the page has them over real deliveries: true
/// for what the server sent now or a little while ago, false for a changed body, another secret,
/// or a correctly signed delivery whose timestamp lies outside the replay window (old or ahead).
@Suite("docs/events.md: checking a webhook's signature")
struct SignatureSnippetTests {
    /// The code block of `language` after the heading `### title` in docs/events.md.
    static func snippet(_ title: String, _ language: String) throws -> String {
        let page = try String(contentsOf: Vectors.repositoryRoot.appendingPathComponent("docs/events.md"), encoding: .utf8)
        let heading = try #require(page.range(of: "### \(title)\n"), "docs/events.md has no \(title) example")
        let start = try #require(page.range(of: "```\(language)\n", range: heading.upperBound..<page.endIndex))
        let end = try #require(page.range(of: "```", range: start.upperBound..<page.endIndex))
        return String(page[start.upperBound..<end.lowerBound])
    }

    /// A delivery as a receiver gets it: its body and `ReceiptKit-Signature` header.
    typealias SignedDelivery = (body: [UInt8], header: String)

    /// The deliveries of a real server whose clock is the real time moved by each of `offsets`
    /// in turn: each event is signed at that instant, as a server whose clock is that far off, or
    /// a request recorded then and replayed now, would have it.
    static func deliveries(signedAt offsets: [Duration]) async throws -> [SignedDelivery] {
        let receiver = try WebhookReceiver()
        let offset = Locked(Duration.zero)
        let clock: @Sendable () -> Date = {
            let moved = offset.withLockedValue { $0 }.components
            return Date(timeIntervalSinceNow: Double(moved.seconds) + Double(moved.attoseconds) / 1e18)
        }
        let bodies = try WebhookDeliveryTests.changes(of: offsets.indices.map { String(7991 + 10 * $0) }).prefix(offsets.count)
        return try await receiver.run {
            try await TestServer.run(.sqlite, clock: clock, configure: WebhookDeliveryTests.sending(to: receiver)) { server in
                for (index, (moved, body)) in zip(offsets, bodies).enumerated() {
                    offset.withLockedValue { $0 = moved }
                    #expect(try await server.notify(body).status == .ok)
                    try await waitUntil("the receiver gets event \(index + 1)") { receiver.accepted.count == index + 1 }
                }
            }
            return try receiver.accepted.map { ($0.body, try #require($0.headers["receiptkit-signature"])) }
        }
    }

    /// The cases each snippet must decide (body, header, secret, expected), from deliveries
    /// signed now, 2 minutes ago (inside the pages' 5-minute window), 10 minutes ago (a replay)
    /// and 10 minutes ahead. The old and the future ones carry a signature that is right for
    /// their `t` (checked here): the window alone must refuse them.
    static func cases() async throws -> [(body: [UInt8], header: String, secret: String, valid: Bool)] {
        let secret = WebhookDeliveryTests.secret
        let signed = try await deliveries(signedAt: [.zero, .seconds(-120), .seconds(-600), .seconds(600)])
        try #require(signed.count == 4)
        let (now, recent, old, future) = (signed[0], signed[1], signed[2], signed[3])
        for delivery in [recent, old, future] {
            let received = WebhookReceiver.Received(
                path: "/", headers: ["receiptkit-signature": delivery.header], body: delivery.body, status: 200)
            #expect(signatureIsValid(received, secret: secret), "\(delivery.header): the HMAC is right for its t")
        }
        var changed = now.body
        changed[changed.count / 2] ^= 0x01
        return [
            (now.body, now.header, secret, true),
            (recent.body, recent.header, secret, true),
            (changed, now.header, secret, false),
            (now.body, now.header, secret + "x", false),
            (old.body, old.header, secret, false),
            (future.body, future.header, secret, false),
            (now.body, "v1=00", secret, false),
        ]
    }

    @Test("the Node function", .requires(.node))
    func node() async throws {
        try await Self.check(
            "node", ["-e"], snippet: ("Node", "js"),
            call: "console.log(verifyReceiptKitSignature(require('node:fs').readFileSync(process.argv[1]), process.argv[2], process.argv[3]));")
    }

    @Test("the Python function", .requires(.python))
    func python() async throws {
        try await Self.check(
            "python3", ["-c"], snippet: ("Python", "python"),
            call: "import sys\nprint(str(verify_receiptkit_signature(open(sys.argv[1], 'rb').read(), sys.argv[2], sys.argv[3])).lower())")
    }

    @Test("the PHP function", .requires(.php))
    func php() async throws {
        try await Self.check(
            "php", ["-r"], snippet: ("PHP", "php"), afterScript: ["--"],
            call: "echo verify_receiptkit_signature(file_get_contents($argv[1]), $argv[2], $argv[3]) ? 'true' : 'false';")
    }

    /// Runs the page's function of `snippet` (its heading and code block language) followed by
    /// `call`, which prints `true` or `false`, as `interpreter options… SCRIPT afterScript… FILE
    /// HEADER SECRET` over each case, FILE holding the case's body.
    static func check(
        _ interpreter: String, _ options: [String], snippet: (title: String, language: String), afterScript: [String] = [],
        call: String
    ) async throws {
        let executable = try #require(Tools.path(of: interpreter))
        let script = try Self.snippet(snippet.title, snippet.language) + "\n" + call
        for (index, test) in try await Self.cases().enumerated() {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-webhook-\(UUID().uuidString)")
            try Data(test.body).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let output = try await Tools.run(executable, options + [script] + afterScript + [file.path, test.header, test.secret])
            #expect(output.status == 0, "\(output.text)")
            #expect(output.text.trimmingCharacters(in: .whitespacesAndNewlines) == String(test.valid), "case \(index)")
        }
    }
}
