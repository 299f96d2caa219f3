import Foundation
import ReceiptKit
import Testing

/// Apple's payload models from `../shared/vectors/jws/models`, signed under the test PKI and
/// verified: every field Apple defines decodes. Skipped when the folder is absent.
@Suite("Apple payload models (../shared/vectors/jws/models)", .requires(.sharedVectors))
struct PayloadModelTests {
    let signer: TestSigner
    let verifier: AppStoreVerifier

    init() throws {
        signer = try TestSigner.standard()
        // Apple's models are dated 2023, before the test leaf's validity: validate at a fixed time.
        verifier = try Fixtures.testVerifier(validationTime: .fixed(Timestamp(millisecondsSince1970: 1_748_779_200_000)))
    }

    func token(_ model: String) throws -> String {
        try signer.sign(payloadBytes: Fixtures.sharedVector("jws/models/\(model)"), headerBytes: Array(signer.header().utf8))
    }

    @Test("transaction: every field")
    func transaction() throws {
        let payload = try verifier.verifyTransaction(token("signedTransaction.json")).payload
        #expect(payload.transactionId == "23456")
        #expect(payload.originalTransactionId == "12345")
        #expect(payload.webOrderLineItemId == "34343")
        #expect(payload.bundleId == "com.example")
        #expect(payload.productId == "com.example.product")
        #expect(payload.subscriptionGroupIdentifier == "55555")
        #expect(payload.purchaseDate?.millisecondsSince1970 == 1_698_148_900_000)
        #expect(payload.originalPurchaseDate?.millisecondsSince1970 == 1_698_148_800_000)
        #expect(payload.expiresDate?.millisecondsSince1970 == 1_698_149_000_000)
        #expect(payload.quantity == 1)
        #expect(payload.rawType == "Auto-Renewable Subscription")
        #expect(payload.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(payload.rawInAppOwnershipType == "PURCHASED")
        #expect(payload.revocationReason == 1)
        #expect(payload.revocationDate?.millisecondsSince1970 == 1_698_148_950_000)
        #expect(payload.isUpgraded == true)
        #expect(payload.offerType == 1)
        #expect(payload.offerIdentifier == "abc.123")
        #expect(payload.rawEnvironment == "LocalTesting")
        #expect(payload.rawTransactionReason == "PURCHASE")
        #expect(payload.storefront == "USA")
        #expect(payload.storefrontId == "143441")
        #expect(payload.price == 10990)
        #expect(payload.currency == "USD")
        #expect(payload.rawOfferDiscountType == "PAY_AS_YOU_GO")
        #expect(payload.appTransactionId == "71134")
        #expect(payload.offerPeriod == "P1Y")
        #expect(payload.billingPlanType == "MONTHLY")
        #expect(payload.advancedCommerceInfo?.items?.first?.refunds?.first?.refundAmount == 5000)
        #expect(payload.advancedCommerceInfo?.taxRate == "0.15")
        #expect(payload.commitmentInfo?.totalBillingPeriods == 12)
        let normalized = NormalizedTransaction(payload)
        #expect(normalized.offer?.type == "introductory")
        #expect(normalized.offer?.id == "abc.123")
        #expect(normalized.offer?.discountType == "pay_as_you_go")
        #expect(normalized.offer?.period == "P1Y")
        #expect(normalized.revocationReason == "refunded_due_to_issue")
        let revoked = try verifier.verifyTransaction(token("signedTransactionWithRevocation.json")).payload
        #expect(revoked.rawRevocationType == "REFUND_PRORATED")
        #expect(revoked.revocationPercentage == 50000)
    }

    @Test("renewal info: every field")
    func renewalInfo() throws {
        let payload = try verifier.verifyRenewalInfo(token("signedRenewalInfo.json")).payload
        #expect(payload.expirationIntent == 1)
        #expect(payload.originalTransactionId == "12345")
        #expect(payload.autoRenewProductId == "com.example.product.2")
        #expect(payload.productId == "com.example.product")
        #expect(payload.autoRenewStatus == 1)
        #expect(payload.isInBillingRetryPeriod == true)
        #expect(payload.priceIncreaseStatus == 0)
        #expect(payload.gracePeriodExpiresDate?.millisecondsSince1970 == 1_698_148_900_000)
        #expect(payload.offerType == 2)
        #expect(payload.offerIdentifier == "abc.123")
        #expect(payload.recentSubscriptionStartDate?.millisecondsSince1970 == 1_698_148_800_000)
        #expect(payload.renewalDate?.millisecondsSince1970 == 1_698_148_850_000)
        #expect(payload.renewalPrice == 9990)
        #expect(payload.currency == "USD")
        #expect(payload.rawOfferDiscountType == "PAY_AS_YOU_GO")
        #expect(payload.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        #expect(payload.appTransactionId == "71134")
        #expect(payload.offerPeriod == "P1Y")
        #expect(payload.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(payload.renewalBillingPlanType == "MONTHLY")
        #expect(payload.advancedCommerceInfo?.items?.first?.priceIncreaseInfo?.dependentSKUs?.count == 2)
        #expect(payload.commitmentInfo?.commitmentRenewalPrice == 9990)
    }

    @Test("notifications: data, summary, external purchase token, appData, consumption request")
    func notifications() throws {
        let summary = try verifier.verify(token("signedSummaryNotification.json"))
        #expect(summary.notification?.summary?.storefrontCountryCodes == ["CAN", "USA", "MEX"])
        #expect(summary.notification?.summary?.failedCount == 2)
        let external = try verifier.verify(token("signedExternalPurchaseTokenNotification.json"))
        #expect(external.environment == "Production")
        #expect(external.notification?.externalPurchaseToken?.tokenCreationDate?.millisecondsSince1970 == 1_698_148_950_000)
        let sandbox = try verifier.verify(token("signedExternalPurchaseTokenSandboxNotification.json"))
        #expect(sandbox.environment == "Sandbox")
    }

    @Test("a notification whose nested JWS is not a JWS is rejected")
    func placeholderNested() throws {
        for model in ["signedNotification.json", "signedConsumptionRequestNotification.json", "signedRescindConsentNotification.json"] {
            let error = expectRejection(.malformedJWS) { _ = try verifier.verifyNotification(token(model)) }
            #expect(error?.reason.contains("signed") == true)
        }
    }

    @Test("app transaction and realtime request: every field")
    func appTransactionAndRealtime() throws {
        let app = try verifier.verifyAppTransaction(token("appTransaction.json")).payload
        #expect(app.rawReceiptType == "LocalTesting")
        #expect(app.appAppleId == 531412)
        #expect(app.applicationVersion == "1.2.3")
        #expect(app.versionExternalIdentifier == 512)
        #expect(app.receiptCreationDate?.millisecondsSince1970 == 1_698_148_900_000)
        #expect(app.originalApplicationVersion == "1.1.2")
        #expect(app.deviceVerification == "device_verification_value")
        #expect(app.deviceVerificationNonce == "48ccfa42-7431-4f22-9908-7e88983e105a")
        #expect(app.preorderDate?.millisecondsSince1970 == 1_698_148_700_000)
        #expect(app.appTransactionId == "71134")
        #expect(app.rawOriginalPlatform == "iOS")
        let realtime = try verifier.verifyRealtimeRequest(token("decodedRealtimeRequest.json")).payload
        #expect(realtime.userLocale == "en-US")
        #expect(realtime.requestIdentifier == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9")
        #expect(realtime.appAppleId == 531412)
        #expect(try verifier.verify(token("decodedRealtimeRequest.json")).kind == .realtimeRequest)
        #expect(try verifier.verify(token("appTransaction.json")).kind == .appTransaction)
    }
}
