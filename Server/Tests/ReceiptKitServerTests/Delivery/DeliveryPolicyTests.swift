import Foundation
import ReceiptKit
import ReceiptKitServer
import Testing

/// The pieces of webhook delivery that are pure: the signature's HMAC and header, and the
/// retry schedule.
@Suite("Webhook signature and retry schedule")
struct DeliveryPolicyTests {
    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    @Test("HMAC-SHA256 gives RFC 4231's answers (test cases 1, 2 and 6: a key longer than the block)")
    func rfc4231() {
        #expect(Self.hex(WebhookSignature.hmacSHA256(key: [UInt8](repeating: 0x0b, count: 20), data: Array("Hi There".utf8)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(Self.hex(WebhookSignature.hmacSHA256(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(Self.hex(WebhookSignature.hmacSHA256(
            key: [UInt8](repeating: 0xaa, count: 131), data: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test("the header is t=SECONDS,v1=HMAC(secret, SECONDS + \".\" + body) in lowercase hex, as libcrypto computes it")
    func header() {
        let body = Array(#"{"id":"1","type":"subscription.started"}"#.utf8)
        let header = WebhookSignature.header(secret: Array("s3cret-s3cret-s3cret".utf8), timestamp: 1_750_000_000, body: body)
        let expected = testHMACSHA256(key: Array("s3cret-s3cret-s3cret".utf8), data: Array("1750000000.".utf8) + body)
        #expect(header == "t=1750000000,v1=\(Self.hex(expected))")
        #expect(header != WebhookSignature.header(secret: Array("s3cret-s3cret-s3creT".utf8), timestamp: 1_750_000_000, body: body))
        #expect(header != WebhookSignature.header(secret: Array("s3cret-s3cret-s3cret".utf8), timestamp: 1_750_000_001, body: body))
    }

    @Test("waits: about a second first, doubling, never more than ten minutes, jittered by at most a fifth")
    func schedule() {
        let policy = DeliveryPolicy()
        let middle = (1...14).map { policy.wait(afterAttempt: $0, random: 0.5) }
        #expect(middle == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600, 600, 600].map { Duration.seconds($0) })
        #expect(policy.wait(afterAttempt: 1, random: 0) == .milliseconds(800))
        #expect(policy.wait(afterAttempt: 1, random: 0.999_999) == .milliseconds(1200))
        #expect(policy.wait(afterAttempt: 12, random: 0.999_999) == .seconds(600))
        #expect(policy.wait(afterAttempt: 12, random: 0) == .seconds(480))
        // A huge attempt count does not overflow.
        #expect(policy.wait(afterAttempt: 10_000, random: 0.5) == .seconds(600))
    }

    @Test("a failure is tried again until the next attempt would be past the row's time; then it is dead-lettered")
    func deadLetter() {
        let policy = DeliveryPolicy()
        let again = policy.afterFailure(attempts: 3, now: 10_000, giveUpAt: 14_000, random: 0.5, status: 500, error: "HTTP 500")
        #expect(again.state == .pending && again.nextAttemptAt == 14_000 && again.status == 500)
        let dead = policy.afterFailure(attempts: 3, now: 10_001, giveUpAt: 14_000, random: 0.5, status: nil, error: "refused")
        #expect(dead.state == .failed && dead.error == "refused")
    }
}
