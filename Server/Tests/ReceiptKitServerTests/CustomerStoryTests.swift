import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKitServer
import Testing

/// A customer's subscription from purchase to refund, each step a notification posted to the
/// webhook (some twice, one out of order), and the customer's entitlements read over HTTP right
/// after each step, as of that step.
@Suite("A customer's story, end to end over HTTP")
struct CustomerStoryTests {
    @Test("free trial → renewals → billing retry → recovery → grace period → recovery → refund", arguments: Backend.available)
    func story(backend: Backend) async throws {
        let story = try CustomerStory(Payloads())
        let (t0, hour, original, customer) = (CustomerStory.start, CustomerStory.hour, CustomerStory.original, CustomerStory.customer)
        let (purchase, renewal1, renewal2, billingRetry) = (story.purchase, story.renewal1, story.renewal2, story.billingRetry)
        let (recovery1, grace, recovery2, refund) = (story.recovery1, story.grace, story.recovery2, story.refund)

        struct Step {
            let name: String
            let posts: [String]
            let at: Int64
            let status: String
            let entitled: Bool
            let latest: String
            let trial: Bool
        }
        let steps = [
            Step(name: "purchase with a free trial", posts: [purchase], at: t0 + hour, status: "active", entitled: true, latest: "7001", trial: true),
            // The second renewal arrives before the first (out of order), the first twice.
            Step(name: "second renewal, early", posts: [renewal2], at: t0 + 38 * day, status: "active", entitled: true, latest: "7003", trial: false),
            Step(name: "first renewal, late and twice", posts: [renewal1, renewal1], at: t0 + 8 * day, status: "active", entitled: true, latest: "7002", trial: false),
            Step(name: "billing retry", posts: [billingRetry], at: t0 + 68 * day, status: "billing_retry", entitled: false, latest: "7003", trial: false),
            Step(name: "recovery", posts: [recovery1, recovery1], at: t0 + 71 * day, status: "active", entitled: true, latest: "7004", trial: false),
            Step(name: "grace period", posts: [grace, grace], at: t0 + 101 * day, status: "grace_period", entitled: true, latest: "7004", trial: false),
            Step(name: "recovery from grace", posts: [recovery2], at: t0 + 104 * day, status: "active", entitled: true, latest: "7005", trial: false),
            Step(name: "refund", posts: [refund, refund], at: t0 + 111 * day, status: "revoked", entitled: false, latest: "7005", trial: false),
        ]
        try await TestServer.run(backend) { server in
            // Before anything: a customer with nothing.
            let nothing = try await server.get("/v1/customers/\(customer)/entitlements").json()
            #expect(nothing["entitled"] as? Bool == false)
            #expect((nothing["subscriptions"] as? [Any])?.isEmpty == true)

            var posted = 0
            for step in steps {
                for jws in step.posts {
                    let answer = try await server.notify(jws)
                    #expect(answer.status == .ok, "\(step.name): \(answer.text)")
                    posted += 1
                }
                let asOf = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(step.at) / 1000))
                let response = try await server.get("/v1/customers/\(customer)/entitlements?as_of=\(asOf)")
                #expect(response.status == .ok, "\(step.name): \(response.text)")
                let body = try response.json()
                #expect(body["customer_id"] as? String == customer)
                #expect(body["entitled"] as? Bool == step.entitled, "\(step.name): \(response.text)")
                let subscriptions = try #require(body["subscriptions"] as? [[String: Any]], "\(step.name)")
                #expect(subscriptions.count == 1, "\(step.name)")
                let state = try #require(subscriptions.first)
                #expect(state["original_transaction_id"] as? String == original)
                #expect(state["status"] as? String == step.status, "\(step.name): \(response.text)")
                #expect(state["entitled"] as? Bool == step.entitled, "\(step.name)")
                #expect(state["latest_transaction_id"] as? String == step.latest, "\(step.name): \(response.text)")
                #expect(state["is_trial"] as? Bool == step.trial, "\(step.name)")

                // The subscription route answers the same state.
                let subscription = try await server.get("/v1/subscriptions/\(original)?as_of=\(asOf)")
                #expect(subscription.status == .ok)
                #expect(try subscription.json()["status"] as? String == step.status, "\(step.name)")
            }
            // Looking back: the grace period is still what it was at its instant.
            let past = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(t0 + 101 * day) / 1000))
            let then = try await server.get("/v1/subscriptions/\(original)?as_of=\(past)").json()
            #expect(then["status"] as? String == "grace_period")
            #expect(then["apple_status"] as? Int == 4)
            // Before the purchase, the key was not known.
            try await server.get("/v1/subscriptions/\(original)?as_of=2025-01-01T00:00:00Z").expectError(.notFound, "not_found")

            // Every distinct notification once; the duplicates stored nothing.
            try await server.withStore { store async throws in
                #expect(posted == 12)
                #expect(try await store.inputCount(dedupKeys: nil) == 8)
            }
        }
    }
}
