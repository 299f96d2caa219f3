import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKitServer
import Testing

/// The signature checks of `docs/events.md`, run as the page has them over a real delivery: true
/// for what the server sent, false for a changed body, another secret or an old timestamp.
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

    /// One delivery of a real server, signed at the real time: its body and signature header.
    static func delivery() async throws -> (body: [UInt8], header: String) {
        let receiver = try WebhookReceiver()
        let body = try #require(try WebhookDeliveryTests.changes(of: ["7991"]).first)
        return try await receiver.run {
            var delivered: (body: [UInt8], header: String)?
            try await TestServer.run(.sqlite, clock: { Date() }, configure: WebhookDeliveryTests.sending(to: receiver)) { server in
                #expect(try await server.notify(body).status == .ok)
                try await waitUntil("the receiver gets the event") { !receiver.accepted.isEmpty }
            }
            let request = try #require(receiver.accepted.first)
            delivered = (request.body, try #require(request.headers["receiptkit-signature"]))
            return try #require(delivered)
        }
    }

    /// The cases each snippet must decide: (body, header, secret, expected).
    static func cases(_ delivery: (body: [UInt8], header: String)) -> [(body: [UInt8], header: String, secret: String, valid: Bool)] {
        let secret = WebhookDeliveryTests.secret
        let old = delivery.header.replacingOccurrences(of: "t=", with: "t=1")  // a t far in the future
        var changed = delivery.body
        changed[changed.count / 2] ^= 0x01
        return [
            (delivery.body, delivery.header, secret, true),
            (changed, delivery.header, secret, false),
            (delivery.body, delivery.header, secret + "x", false),
            (delivery.body, old, secret, false),
            (delivery.body, "v1=00", secret, false),
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
        let delivery = try await Self.delivery()
        for (index, test) in Self.cases(delivery).enumerated() {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-webhook-\(UUID().uuidString)")
            try Data(test.body).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let output = try await Tools.run(executable, options + [script] + afterScript + [file.path, test.header, test.secret])
            #expect(output.status == 0, "\(output.text)")
            #expect(output.text.trimmingCharacters(in: .whitespacesAndNewlines) == String(test.valid), "case \(index)")
        }
    }
}
