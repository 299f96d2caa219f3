import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import ReceiptKit
import Testing

/// Every endpoint against the fake App Store Server API on loopback: the request Apple gets
/// (method, path, query, body, a token the fake verified) and the verified answer.
@Suite("App Store Server API endpoints")
struct EndpointTests {
    @Test("Get Transaction Info: one verified transaction; the token carried every claim the fake checks")
    func transactionInfo() async throws {
        try await Fixture.withFake { fake, client in
            let item = try await client.transactionInfo("2000000105")
            #expect(item.verified.payload.transactionId == "2000000105")
            #expect(item.verified.payload.productId == "com.receiptkit.monthly")
            #expect(item.verified.validatedAt == Timestamp(millisecondsSince1970: Fixture.signedDate))
            #expect(try Fixture.verifier().verifyTransaction(item.jws).payload.transactionId == "2000000105")
            let request = try #require(fake.requests.last)
            #expect(request.method == "GET" && request.path == "/inApps/v1/transactions/2000000105")
            #expect(request.authorizationFailure == nil)
            #expect(request.claims["iss"] == Fixture.issuerId && request.claims["bid"] == Fixture.bundleId)
            #expect(request.claims["aud"] == "appstoreconnect-v1")
            let iat = try #require(request.claims["iat"].flatMap(Int64.init))
            let exp = try #require(request.claims["exp"].flatMap(Int64.init))
            #expect(exp - iat == 1200)
        }
    }

    @Test("Get Transaction History v2: every page in Apple's order, the revision and the same filters on each")
    func transactionHistoryPages() async throws {
        try await Fixture.withFake { fake, client in
            var pages: [TransactionHistoryPage] = []
            for try await page in client.transactionHistoryPages("2000000100") { pages.append(page) }
            #expect(pages.map(\.transactions.count) == [20, 20, 5])
            #expect(pages.map(\.hasMore) == [true, true, false])
            let ids = pages.flatMap(\.transactions).compactMap(\.verified.payload.transactionId)
            #expect(ids == Fixture.transactions().map(\.transactionId))
            #expect(pages.allSatisfy { $0.rejected.isEmpty && $0.environment == .sandbox && $0.bundleId == Fixture.bundleId })
            #expect(fake.requests.map { $0.queryValues("revision") } == [[], ["r20"], ["r40"]])
            #expect(fake.requests.allSatisfy { $0.path == "/inApps/v2/history/2000000100" })
        }
    }

    @Test("Get Transaction History v2: every filter goes to Apple, on every page")
    func transactionHistoryFilters() async throws {
        try await Fixture.withFake(configure: { $0.pageSize = 2 }) { fake, client in
            let filter = TransactionHistoryFilter(
                startDate: Timestamp(millisecondsSince1970: 1_700_000_000_000),
                endDate: Timestamp(millisecondsSince1970: Fixture.signedDate), productIds: ["com.receiptkit.pack1", "com.receiptkit.pack3"],
                productTypes: [.nonConsumable, .consumable], sort: .descending, subscriptionGroupIdentifiers: ["21000001"],
                inAppOwnershipType: "PURCHASED", revoked: false)
            var pages = 0
            for try await _ in client.transactionHistoryPages("2000000100", filter: TransactionHistoryFilter(
                productIds: ["com.receiptkit.pack0", "com.receiptkit.pack1", "com.receiptkit.pack2"], sort: .descending)) {
                pages += 1
            }
            #expect(pages == 2)
            #expect(fake.requests.map { $0.queryValues("sort") } == [["DESCENDING"], ["DESCENDING"]])
            #expect(fake.requests.map { $0.queryValues("productId").count } == [3, 3])
            _ = try await client.transactionHistory("2000000100", filter: filter, revision: "r0")
            let request = try #require(fake.requests.last)
            #expect(request.queryValues("revision") == ["r0"])
            #expect(request.queryValues("startDate") == ["1700000000000"])
            #expect(request.queryValues("endDate") == [String(Fixture.signedDate)])
            #expect(request.queryValues("productId") == ["com.receiptkit.pack1", "com.receiptkit.pack3"])
            #expect(request.queryValues("productType") == ["NON_CONSUMABLE", "CONSUMABLE"])
            #expect(request.queryValues("sort") == ["DESCENDING"])
            #expect(request.queryValues("subscriptionGroupIdentifier") == ["21000001"])
            #expect(request.queryValues("inAppOwnershipType") == ["PURCHASED"])
            #expect(request.queryValues("revoked") == ["false"])
        }
    }

    @Test("a forged transaction among genuine ones is reported by position and code, never returned")
    func forgedTransaction() async throws {
        try await Fixture.withFake(configure: { $0.forgedTransactionIds = ["2000000107"] }) { _, client in
            let page = try await client.transactionHistory("2000000100")
            #expect(page.transactions.count == 19)
            #expect(!page.transactions.contains { $0.verified.payload.transactionId == "2000000107" })
            #expect(page.rejected.map(\.field) == ["signedTransactions[7]"])
            #expect(page.rejected.first?.error.code == .invalidSignature)
            let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.transactionInfo("2000000107") }
            #expect(error.code == .verificationFailed)
            #expect(error.rejected.map(\.field) == ["signedTransactionInfo"])
            #expect(error.rejected.first?.error.code == .invalidSignature)
        }
    }

    @Test("Get All Subscription Statuses: transaction and renewal info verified, the status filter sent")
    func subscriptionStatuses() async throws {
        try await Fixture.withFake { fake, client in
            let statuses = try await client.subscriptionStatuses("2000000100")
            let group = try #require(statuses.groups.first)
            #expect(group.subscriptionGroupIdentifier == "21000001")
            let last = try #require(group.lastTransactions.first)
            #expect(last.status == .active)
            #expect(last.transaction.verified.payload.transactionId == "2000000139")
            #expect(last.renewalInfo.verified.payload.originalTransactionId == "2000000100")
            #expect(statuses.rejected.isEmpty)
            let expired = try await client.subscriptionStatuses("2000000100", status: [.expired, .revoked])
            #expect(expired.groups.isEmpty)
            #expect(fake.requests.last?.queryValues("status") == ["2", "5"])
        }
    }

    @Test("Get All Subscription Statuses: a subscription whose transaction is forged is left out and reported")
    func forgedStatus() async throws {
        try await Fixture.withFake(configure: { $0.forgedTransactionIds = ["2000000139"] }) { _, client in
            let statuses = try await client.subscriptionStatuses("2000000100")
            #expect(statuses.groups.first?.lastTransactions.isEmpty == true)
            #expect(statuses.rejected.map(\.field) == ["data[0].lastTransactions[0].signedTransactionInfo"])
        }
    }

    @Test("Get Refund History v2: the refunded transaction, verified, over pages")
    func refundHistory() async throws {
        try await Fixture.withFake { fake, client in
            var transactions: [String] = []
            for try await page in client.refundHistoryPages("2000000100") {
                transactions += page.transactions.compactMap(\.verified.payload.transactionId)
            }
            #expect(transactions == ["2000000112"])
            #expect(fake.requests.last?.path == "/inApps/v2/refund/lookup/2000000100")
        }
    }

    @Test("Look Up Order ID: a valid order's transactions verified; an unknown order is status 1")
    func lookUpOrder() async throws {
        try await Fixture.withFake { _, client in
            let order = try await client.lookUpOrder("MQ5X3C7Z1V")
            #expect(order.isValid && order.transactions.count == 2)
            let unknown = try await client.lookUpOrder("NOTANORDER")
            #expect(!unknown.isValid && unknown.transactions.isEmpty)
        }
    }

    @Test("Get App Transaction Info: the app transaction, verified")
    func appTransactionInfo() async throws {
        try await Fixture.withFake { fake, client in
            let app = try await client.appTransactionInfo("2000000100")
            #expect(app.verified.payload.bundleId == Fixture.bundleId)
            #expect(app.verified.payload.appTransactionId == "704289572309870002")
            #expect(fake.requests.last?.path == "/inApps/v1/transactions/appTransactions/2000000100")
        }
    }

    @Test("Get Notification History: the body, every page by pagination token, notifications verified with their nested JWS")
    func notificationHistory() async throws {
        try await Fixture.withFake(configure: { $0.forgedTransactionIds = ["2000000203"] }) { fake, client in
            let request = NotificationHistoryRequest(
                startDate: Timestamp(millisecondsSince1970: Fixture.signedDate - 86_400_000),
                endDate: Timestamp(millisecondsSince1970: Fixture.signedDate), onlyFailures: false)
            var items: [NotificationHistoryPage.Item] = []
            var rejected: [RejectedItem] = []
            for try await page in client.notificationHistoryPages(request) {
                items += page.items
                rejected += page.rejected
            }
            #expect(items.count == 44)
            #expect(rejected.map(\.field) == ["notificationHistory[3].signedPayload"])
            #expect(items.first?.notification.verified.transaction?.payload.transactionId == "2000000100")
            #expect(items.first?.sendAttempts.first?.rawSendAttemptResult == "SUCCESS")
            #expect(fake.requests.map { $0.queryValues("paginationToken") } == [[], ["r20"], ["r40"]])
            let body = try #require(fake.requests.first?.bodyJSON)
            #expect((body["startDate"] as? NSNumber)?.int64Value == Fixture.signedDate - 86_400_000)
            #expect((body["endDate"] as? NSNumber)?.int64Value == Fixture.signedDate)
            #expect(body["onlyFailures"] as? Bool == false)
        }
    }

    @Test("Get Notification History with onlyFailures: only the notifications that never arrived")
    func notificationHistoryOnlyFailures() async throws {
        try await Fixture.withFake(configure: { $0.failedNotificationTransactionIds = ["2000000120", "2000000201"] }) { _, client in
            let page = try await client.notificationHistory(NotificationHistoryRequest(
                startDate: Timestamp(millisecondsSince1970: 0), endDate: Timestamp(millisecondsSince1970: Fixture.signedDate),
                onlyFailures: true))
            #expect(page.items.compactMap(\.notification.verified.transaction?.payload.transactionId) == ["2000000120", "2000000201"])
            #expect(page.items.allSatisfy { $0.sendAttempts.first?.rawSendAttemptResult == "TIMED_OUT" })
        }
    }

    @Test("Request a Test Notification, then Get Test Notification Status: the TEST notification, verified")
    func testNotification() async throws {
        try await Fixture.withFake { fake, client in
            let token = try await client.requestTestNotification()
            #expect(fake.requests.last?.method == "POST")
            let status = try await client.testNotificationStatus(token)
            #expect(status.notification.verified.notification.payload.rawNotificationType == "TEST")
            #expect(status.sendAttempts.count == 1)
            let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.testNotificationStatus("unknown") }
            #expect(error.apiErrorCode == .testNotificationNotFound && error.httpStatus == 404)
        }
    }

    @Test("Send Consumption Information v2 and v1: the body Apple documents, by PUT")
    func consumption() async throws {
        try await Fixture.withFake { fake, client in
            try await client.sendConsumptionInformation("2000000201", ConsumptionRequest(
                customerConsented: true, consumptionPercentage: 25_000, deliveryStatus: "DELIVERED", refundPreference: "DECLINE",
                sampleContentProvided: false))
            let v2 = try #require(fake.requests.last)
            #expect(v2.method == "PUT" && v2.path == "/inApps/v2/transactions/consumption/2000000201")
            #expect(v2.bodyJSON as NSDictionary? == [
                "customerConsented": true, "consumptionPercentage": 25_000, "deliveryStatus": "DELIVERED",
                "refundPreference": "DECLINE", "sampleContentProvided": false,
            ] as NSDictionary)
            try await client.sendConsumptionInformationV1("2000000201", ConsumptionRequestV1(
                customerConsented: true, consumptionStatus: 2, platform: 1, sampleContentProvided: false, deliveryStatus: 0,
                appAccountToken: "", accountTenure: 3, playTime: 4, lifetimeDollarsRefunded: 0, lifetimeDollarsPurchased: 2,
                userStatus: 1, refundPreference: 2))
            let v1 = try #require(fake.requests.last)
            #expect(v1.path == "/inApps/v1/transactions/consumption/2000000201")
            #expect(v1.bodyJSON?["consumptionStatus"] as? Int == 2 && v1.bodyJSON?["appAccountToken"] as? String == "")
            let error = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.sendConsumptionInformation("2000000201", ConsumptionRequest(
                    customerConsented: false, deliveryStatus: "DELIVERED", sampleContentProvided: false))
            }
            #expect(error.code == .apiError && error.apiErrorCode?.rawValue == 4_000_035 && error.attempts == 1)
        }
    }

    @Test("Set App Account Token, Finish Transaction")
    func appAccountTokenAndFinish() async throws {
        try await Fixture.withFake { fake, client in
            try await client.setAppAccountToken(
                originalTransactionId: "2000000100", appAccountToken: UUIDString("7E3FB20B-4CDB-47CC-936D-99D65F608138"))
            let set = try #require(fake.requests.last)
            #expect(set.method == "PUT" && set.path == "/inApps/v1/transactions/2000000100/appAccountToken")
            #expect(set.bodyJSON as NSDictionary? == ["appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138"] as NSDictionary)
            #expect(throws: AppStoreServerAPIError.self) { try UUIDString("customer-42") }
            try await client.finishTransaction("2000000201")
            #expect(fake.requests.last?.method == "POST" && fake.requests.last?.path == "/inApps/v1/transactions/2000000201/finish")
        }
    }

    @Test("Extend a Subscription Renewal Date, Mass Extend and its status")
    func extend() async throws {
        try await Fixture.withFake { fake, client in
            let answer = try await client.extendRenewalDate(
                originalTransactionId: "2000000100",
                ExtendRenewalDateRequest(extendByDays: 7, extendReasonCode: 3, requestIdentifier: "outage-2026-05-31"))
            #expect(answer.success == true && answer.originalTransactionId == "2000000100")
            let expires = try #require(Fixture.transactions().last { $0.originalTransactionId == "2000000100" }?.expiresDate)
            #expect(answer.effectiveDate == Timestamp(millisecondsSince1970: expires + 7 * 86_400_000))
            #expect(fake.requests.last?.bodyJSON as NSDictionary? == [
                "extendByDays": 7, "extendReasonCode": 3, "requestIdentifier": "outage-2026-05-31",
            ] as NSDictionary)
            let identifier = try await client.massExtendRenewalDate(MassExtendRenewalDateRequest(
                extendByDays: 3, extendReasonCode: 1, requestIdentifier: "a5d3ce4c-bd5a-4b8c-9a49-b4a2f0d53a44",
                storefrontCountryCodes: ["USA", "FRA"], productId: "com.receiptkit.monthly"))
            #expect(identifier == "a5d3ce4c-bd5a-4b8c-9a49-b4a2f0d53a44")
            #expect(fake.requests.last?.method == "POST" && fake.requests.last?.bodyJSON?["storefrontCountryCodes"] as? [String] == ["USA", "FRA"])
            let status = try await client.massExtendRenewalDateStatus(productId: "com.receiptkit.monthly", requestIdentifier: identifier)
            #expect(status.complete == true && status.succeededCount == 40 && status.failedCount == 0)
            #expect(fake.requests.last?.path == "/inApps/v1/subscriptions/extend/mass/com.receiptkit.monthly/\(identifier)")
        }
    }
}
