import AppStoreServerAPI
import AppStoreServerAPIFake
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ReceiptKit
import Synchronization
import Testing

/// Identifiers the Retention Messaging tests upload under.
enum RetentionIds {
    static let image = "0f6a2a52-8b7e-4c1d-9d0e-5a1b2c3d4e01"
    static let bullet = "0f6a2a52-8b7e-4c1d-9d0e-5a1b2c3d4e02"
    static let message = "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c01"
    static let otherMessage = "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c02"
    static let unknown = "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3cff"

    static func uuid(_ text: String) throws -> UUIDString { try UUIDString(text) }
}

/// Every Retention Messaging endpoint against the fake App Store Server API on loopback: the
/// request Apple gets (method, path, query, body, content type, a token the fake verified),
/// Apple's answer, and Apple's error codes from the fake's state.
@Suite("Retention Messaging endpoints")
struct RetentionMessagingTests {
    func fullSizeImage(height: Int = 400) throws -> RetentionImage {
        try RetentionImage(png: TestPNG.make(width: 3840, height: height), size: .fullSize)
    }

    func bulletImage() throws -> RetentionImage {
        try RetentionImage(png: TestPNG.make(width: 1024, height: 1024), size: .bulletPoint)
    }

    @Test("Upload Image: the PNG itself as image/png, the size in the query; listed with size and state; a reused id is Apple's 409")
    func uploadImage() async throws {
        try await Fixture.withFake { fake, client in
            let image = try fullSizeImage()
            #expect(image.width == 3840 && image.height == 400)
            try await client.uploadImage(RetentionIds.uuid(RetentionIds.image.uppercased()), image)
            let request = try #require(fake.requests.last)
            #expect(request.method == "PUT" && request.path == "/inApps/v1/messaging/image/\(RetentionIds.image)")
            #expect(request.queryValues("imageSize") == ["FULL_SIZE"])
            #expect(request.contentType == "image/png" && request.body == image.png)
            #expect(request.authorizationFailure == nil && request.claims["aud"] == "appstoreconnect-v1")
            #expect(request.claims["iss"] == Fixture.issuerId && request.claims["bid"] == Fixture.bundleId)
            try await client.uploadImage(RetentionIds.uuid(RetentionIds.bullet), bulletImage())
            #expect(fake.requests.last?.queryValues("imageSize") == ["BULLET_POINT"])

            let list = try #require(try await client.imageList().imageIdentifiers)
            #expect(fake.requests.last?.method == "GET" && fake.requests.last?.path == "/inApps/v1/messaging/image/list")
            #expect(list.map(\.imageIdentifier) == [RetentionIds.image, RetentionIds.bullet])
            #expect(list.map(\.imageSize) == [.fullSize, .bulletPoint])
            // The sandbox approves an upload at once; elsewhere it waits for Apple's review.
            #expect(list.map(\.imageState) == [.approved, .approved])

            let again = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.uploadImage(RetentionIds.uuid(RetentionIds.image), image)
            }
            #expect(again.code == .apiError && again.apiErrorCode == .imageAlreadyExists && again.httpStatus == 409)
            #expect(again.attempts == 1)
            fake.retention.maximumCount = 2
            let full = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.uploadImage(RetentionIds.uuid(RetentionIds.unknown), image)
            }
            #expect(full.apiErrorCode == .maximumNumberOfImagesReached && full.httpStatus == 403)
        }
    }

    @Test("an image Apple would refuse is refused before anything is sent, with invalid_image naming the rule")
    func imageChecks() throws {
        func refusal(_ png: [UInt8], _ size: ImageSize) throws -> AppStoreServerAPIError {
            try #require(throws: AppStoreServerAPIError.self) { try RetentionImage(png: png, size: size) }
        }
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01]
        let notPNG = try refusal(jpeg, .fullSize)
        #expect(notPNG.code == .invalidImage && notPNG.reason.contains("not a PNG"))
        let square = try refusal(TestPNG.make(width: 1024, height: 1024), .fullSize)
        #expect(square.code == .invalidImage)
        #expect(square.reason.contains("3840 pixels wide and 160 to 2160 pixels high") && square.reason.contains("1024 × 1024"))
        #expect(try refusal(TestPNG.make(width: 3840, height: 2161), .fullSize).reason.contains("3840 × 2161"))
        #expect(try refusal(TestPNG.make(width: 3840, height: 159), .fullSize).reason.contains("3840 × 159"))
        #expect(try refusal(TestPNG.make(width: 3839, height: 400), .fullSize).reason.contains("3839 × 400"))
        #expect(try refusal(TestPNG.make(width: 3840, height: 400), .bulletPoint).reason.contains("BULLET_POINT image is 1024 × 1024"))
        #expect(try refusal(TestPNG.make(width: 1024, height: 1023), .bulletPoint).reason.contains("1024 × 1023"))
        #expect(try refusal(TestPNG.make(width: 16, height: 16, alpha: true), .bulletPoint).reason.contains("alpha channel"))
        #expect(try refusal(TestPNG.make(width: 1024, height: 1024, transparentColour: true), .bulletPoint).reason.contains("tRNS"))
        let truncated = try refusal(Array(TestPNG.make(width: 1024, height: 1024).prefix(24)), .bulletPoint)
        #expect(truncated.code == .invalidImage && truncated.reason.contains("truncated"))
        // The bounds themselves are Apple's: 160 and 2160 high are accepted.
        #expect(try fullSizeImage(height: 160).height == 160)
        #expect(try fullSizeImage(height: 2160).height == 2160)
    }

    @Test("the fake refuses what Apple refuses of an image sent as it is: InvalidImageError, BadRequestImageSizeError")
    func fakeImageChecks() async throws {
        // The client cannot send an unchecked image: these go as raw requests with a token of the
        // test key, to show that the fake judges images by Apple's rules on its own.
        try await Fixture.withFake { fake, client in
            let token = try AppStoreServerAPIToken(
                key: Fixture.key(), bundleId: Fixture.bundleId, issuedAt: Timestamp(Date()), lifetimeSeconds: 600)
            func put(_ png: [UInt8], size: String, contentType: String = "image/png") async throws -> Int64? {
                var request = HTTPClientRequest(url: client.baseURL + "/inApps/v1/messaging/image/\(RetentionIds.unknown)?imageSize=\(size)")
                request.method = .PUT
                request.headers.add(name: "Authorization", value: "Bearer \(token.token)")
                request.headers.add(name: "Content-Type", value: contentType)
                request.body = .bytes(ByteBuffer(bytes: png))
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 16)
                let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
                #expect(response.status.code == 400)
                return (json?["errorCode"] as? NSNumber)?.int64Value
            }
            let bullet = TestPNG.make(width: 1024, height: 1024)
            #expect(try await put(bullet, size: "FULL_SIZE") == APIErrorCode.invalidImage.rawValue)
            #expect(try await put(TestPNG.make(width: 3840, height: 2161), size: "FULL_SIZE") == APIErrorCode.invalidImage.rawValue)
            #expect(try await put(TestPNG.make(width: 16, height: 16, alpha: true), size: "BULLET_POINT") == APIErrorCode.invalidImage.rawValue)
            #expect(try await put(bullet, size: "BULLET_POINT", contentType: "image/jpeg") == APIErrorCode.invalidImage.rawValue)
            #expect(try await put(bullet, size: "THUMBNAIL") == APIErrorCode.badRequestImageSize.rawValue)
            #expect(fake.requests.allSatisfy { $0.authorizationFailure == nil })
            #expect(try await client.imageList().imageIdentifiers?.isEmpty == true)
        }
    }

    @Test("Delete Image: 200, then Apple's ImageNotFoundError; an image a message uses is ImageInUseError")
    func deleteImage() async throws {
        try await Fixture.withFake { fake, client in
            try await client.uploadImage(RetentionIds.uuid(RetentionIds.image), fullSizeImage())
            try await client.uploadImage(RetentionIds.uuid(RetentionIds.bullet), bulletImage())
            try await client.uploadMessage(RetentionIds.uuid(RetentionIds.message), UploadMessageRequestBody(
                header: "Before you go", body: "Keep your plan",
                image: UploadMessageImage(imageIdentifier: RetentionIds.uuid(RetentionIds.image), altText: "A mountain")))
            let inUse = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.deleteImage(RetentionIds.uuid(RetentionIds.image))
            }
            #expect(inUse.apiErrorCode == .imageInUse && inUse.httpStatus == 403 && inUse.attempts == 1)
            try await client.deleteImage(RetentionIds.uuid(RetentionIds.bullet))
            #expect(fake.requests.last?.method == "DELETE" && fake.requests.last?.path == "/inApps/v1/messaging/image/\(RetentionIds.bullet)")
            let gone = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.deleteImage(RetentionIds.uuid(RetentionIds.bullet))
            }
            #expect(gone.apiErrorCode == .imageNotFound && gone.httpStatus == 404)
            try await client.deleteMessage(RetentionIds.uuid(RetentionIds.message))
            try await client.deleteImage(RetentionIds.uuid(RetentionIds.image))
            #expect(try await client.imageList().imageIdentifiers?.isEmpty == true)
        }
    }

    @Test("Upload Message: Apple's body (header, body, image, headerPosition, bulletPoints), listed; promotional text has no image")
    func uploadMessage() async throws {
        try await Fixture.withFake { fake, client in
            try await client.uploadImage(RetentionIds.uuid(RetentionIds.image), fullSizeImage())
            try await client.uploadImage(RetentionIds.uuid(RetentionIds.bullet), bulletImage())
            try await client.uploadMessage(RetentionIds.uuid(RetentionIds.message), UploadMessageRequestBody(
                header: "Before you go", body: "Your plan keeps every feature.",
                image: UploadMessageImage(imageIdentifier: RetentionIds.uuid(RetentionIds.image), altText: "A mountain at dawn"),
                headerPosition: .aboveImage,
                bulletPoints: [
                    BulletPoint(text: "Offline maps", imageIdentifier: RetentionIds.uuid(RetentionIds.bullet), altText: "A map"),
                    BulletPoint(text: "Family sharing", imageIdentifier: RetentionIds.uuid(RetentionIds.bullet), altText: "Two people"),
                ]))
            let request = try #require(fake.requests.last)
            #expect(request.method == "PUT" && request.path == "/inApps/v1/messaging/message/\(RetentionIds.message)")
            #expect(request.contentType == "application/json")
            #expect(request.bodyJSON as NSDictionary? == [
                "header": "Before you go", "body": "Your plan keeps every feature.",
                "image": ["imageIdentifier": RetentionIds.image, "altText": "A mountain at dawn"],
                "headerPosition": "ABOVE_IMAGE",
                "bulletPoints": [
                    ["text": "Offline maps", "imageIdentifier": RetentionIds.bullet, "altText": "A map"],
                    ["text": "Family sharing", "imageIdentifier": RetentionIds.bullet, "altText": "Two people"],
                ],
            ] as NSDictionary)
            try await client.uploadMessage(
                RetentionIds.uuid(RetentionIds.otherMessage), UploadMessageRequestBody(header: "Stay for less", body: "Half price for three months."))
            #expect(fake.requests.last?.bodyJSON as NSDictionary? == ["header": "Stay for less", "body": "Half price for three months."] as NSDictionary)
            fake.retention.setMessageState(RetentionIds.otherMessage, "REJECTED")
            let list = try #require(try await client.messageList().messageIdentifiers)
            #expect(fake.requests.last?.path == "/inApps/v1/messaging/message/list")
            #expect(list.map(\.messageIdentifier) == [RetentionIds.message, RetentionIds.otherMessage])
            #expect(list.map(\.messageState) == [.approved, .rejected])
        }
    }

    @Test("Upload Message: Apple's refusals — too long, too many bullets, ABOVE_IMAGE without an image, an image of the other size, a reused id")
    func uploadMessageRefusals() async throws {
        try await Fixture.withFake { fake, client in
            try await client.uploadImage(RetentionIds.uuid(RetentionIds.image), fullSizeImage())
            let id = try RetentionIds.uuid(RetentionIds.message)
            func refusal(_ body: UploadMessageRequestBody) async throws -> AppStoreServerAPIError {
                try await #require(throws: AppStoreServerAPIError.self) { try await client.uploadMessage(id, body) }
            }
            let tooLong = try await refusal(UploadMessageRequestBody(header: String(repeating: "h", count: 67), body: "b"))
            #expect(tooLong.code == .apiError && tooLong.apiErrorCode == .headerTooLong && tooLong.httpStatus == 400)
            #expect(tooLong.attempts == 1)
            #expect(try await refusal(UploadMessageRequestBody(header: "h", body: String(repeating: "b", count: 145))).apiErrorCode == .bodyTooLong)
            let bullet = BulletPoint(text: "t", imageIdentifier: try RetentionIds.uuid(RetentionIds.bullet), altText: "a")
            #expect(try await refusal(UploadMessageRequestBody(header: "h", body: "b", bulletPoints: Array(repeating: bullet, count: 6)))
                .apiErrorCode == .badRequestTooManyBulletPoints)
            #expect(try await refusal(UploadMessageRequestBody(header: "h", body: "b", headerPosition: .aboveImage))
                .apiErrorCode == .badRequestAboveImageRequiresAnImage)
            let fullSizeAsBullet = BulletPoint(text: "t", imageIdentifier: try RetentionIds.uuid(RetentionIds.image), altText: "a")
            #expect(try await refusal(UploadMessageRequestBody(header: "h", body: "b", bulletPoints: [fullSizeAsBullet]))
                .apiErrorCode == .badRequestImageSize)
            // 66 characters of header, counted as Apple's libraries count, are accepted.
            try await client.uploadMessage(id, UploadMessageRequestBody(header: String(repeating: "é", count: 66), body: "b"))
            #expect(try await refusal(UploadMessageRequestBody(header: "h", body: "b")).apiErrorCode == .messageAlreadyExists)
            #expect(fake.requests.filter { $0.method == "PUT" }.count == 8)
            try await client.deleteMessage(id)
            #expect(fake.requests.last?.method == "DELETE" && fake.requests.last?.path == "/inApps/v1/messaging/message/\(RetentionIds.message)")
            let gone = try await #require(throws: AppStoreServerAPIError.self) { try await client.deleteMessage(id) }
            #expect(gone.apiErrorCode == .messageNotFound && gone.httpStatus == 404)
        }
    }

    @Test("Default messages: an unknown message, one not approved, one whose image is not approved are Apple's errors; set, get, replace, delete")
    func defaultMessages() async throws {
        try await Fixture.withFake { fake, client in
            let product = "com.receiptkit.monthly"
            let message = try RetentionIds.uuid(RetentionIds.message)
            let unknown = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.configureDefaultMessage(productId: product, locale: "en-US", messageIdentifier: RetentionIds.uuid(RetentionIds.unknown))
            }
            #expect(unknown.apiErrorCode == .messageNotFound && unknown.httpStatus == 404)
            let request = try #require(fake.requests.last)
            #expect(request.method == "PUT" && request.path == "/inApps/v1/messaging/default/\(product)/en-US")
            #expect(request.bodyJSON as NSDictionary? == ["messageIdentifier": RetentionIds.unknown] as NSDictionary)

            fake.retention.reviewState = "PENDING"
            try await client.uploadImage(RetentionIds.uuid(RetentionIds.image), fullSizeImage())
            try await client.uploadMessage(message, UploadMessageRequestBody(
                header: "Before you go", body: "Keep your plan",
                image: UploadMessageImage(imageIdentifier: RetentionIds.uuid(RetentionIds.image), altText: "A mountain")))
            let pending = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.configureDefaultMessage(productId: product, locale: "en-US", messageIdentifier: message)
            }
            #expect(pending.apiErrorCode == .messageNotApproved && pending.httpStatus == 403)
            fake.retention.setMessageState(RetentionIds.message, "APPROVED")
            let imagePending = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.configureDefaultMessage(productId: product, locale: "en-US", messageIdentifier: message)
            }
            #expect(imagePending.apiErrorCode == .imageNotApproved && imagePending.httpStatus == 403)
            fake.retention.setImageState(RetentionIds.image, "APPROVED")
            try await client.configureDefaultMessage(productId: product, locale: "en-US", messageIdentifier: message)
            #expect(try await client.defaultMessage(productId: product, locale: "en-US").messageIdentifier == RetentionIds.message)
            #expect(fake.requests.last?.method == "GET" && fake.requests.last?.path == "/inApps/v1/messaging/default/\(product)/en-US")

            fake.retention.reviewState = "APPROVED"
            try await client.uploadMessage(RetentionIds.uuid(RetentionIds.otherMessage), UploadMessageRequestBody(header: "h", body: "b"))
            try await client.configureDefaultMessage(
                productId: product, locale: "en-US", messageIdentifier: RetentionIds.uuid(RetentionIds.otherMessage))
            #expect(try await client.defaultMessage(productId: product, locale: "en-US").messageIdentifier == RetentionIds.otherMessage)
            let otherLocale = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.defaultMessage(productId: product, locale: "fr-FR")
            }
            #expect(otherLocale.apiErrorCode == .defaultMessageNotFound && otherLocale.httpStatus == 404)
            let badLocale = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.configureDefaultMessage(productId: product, locale: "english!", messageIdentifier: message)
            }
            #expect(badLocale.apiErrorCode == .invalidLocale && badLocale.httpStatus == 400)

            try await client.deleteDefaultMessage(productId: product, locale: "en-US")
            #expect(fake.requests.last?.method == "DELETE" && fake.requests.last?.path == "/inApps/v1/messaging/default/\(product)/en-US")
            let deleted = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.defaultMessage(productId: product, locale: "en-US")
            }
            #expect(deleted.apiErrorCode == .defaultMessageNotFound)
            // Idempotent, as Apple documents.
            try await client.deleteDefaultMessage(productId: product, locale: "en-US")
        }
    }

    @Test("Realtime URL: none is Apple's 404; set, get, replace, delete; an invalid URL; production needs a passed performance test")
    func realtimeURL() async throws {
        try await Fixture.withFake { fake, client in
            let none = try await #require(throws: AppStoreServerAPIError.self) { try await client.realtimeURL() }
            #expect(none.apiErrorCode == .realtimeURLNotFound && none.httpStatus == 404)
            try await client.configureRealtimeURL("https://receiptkit.example/retention")
            let request = try #require(fake.requests.last)
            #expect(request.method == "PUT" && request.path == "/inApps/v1/messaging/realtime/url")
            #expect(request.bodyJSON as NSDictionary? == ["realtimeURL": "https://receiptkit.example/retention"] as NSDictionary)
            #expect(try await client.realtimeURL().realtimeURL == "https://receiptkit.example/retention")
            try await client.configureRealtimeURL("https://receiptkit.example/retention/v2")
            #expect(try await client.realtimeURL().realtimeURL == "https://receiptkit.example/retention/v2")
            for invalid in ["ftp://receiptkit.example/retention", "http://receiptkit.example/retention",
                            "https://receiptkit.example/" + String(repeating: "a", count: 240)] {
                let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.configureRealtimeURL(invalid) }
                #expect(error.apiErrorCode == .badRequestRealtimeURL && error.httpStatus == 400)
            }
            try await client.deleteRealtimeURL()
            #expect(fake.requests.last?.method == "DELETE" && fake.requests.last?.path == "/inApps/v1/messaging/realtime/url")
            let deleted = try await #require(throws: AppStoreServerAPIError.self) { try await client.realtimeURL() }
            #expect(deleted.apiErrorCode == .realtimeURLNotFound)
        }
        let production = try Fixture.fake(environment: "Production")
        try await production.run { baseURL in
            let client = try Fixture.client(baseURL)
            let forbidden = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.configureRealtimeURL("https://receiptkit.example/retention")
            }
            #expect(forbidden.apiErrorCode == .forbiddenNoPassingTest && forbidden.httpStatus == 403)
            production.retention.passedPerformanceTest = true
            try await client.configureRealtimeURL("https://receiptkit.example/retention")
            #expect(try await client.realtimeURL().realtimeURL == "https://receiptkit.example/retention")
        }
    }
}

/// Holds requests until the test opens it.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiting.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        waiting.forEach { $0.resume() }
    }
}

/// What a test's Get Retention Message endpoint received, each request verified.
final class RealtimeRequests: Sendable {
    private let state = Mutex<[RealtimeRequest]>([])
    private let failures = Mutex<[String]>([])

    /// Verifies `body` as Apple's `{"signedPayload": …}` and records it.
    func record(_ body: [UInt8]) {
        do {
            let json = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
            guard let jws = json?["signedPayload"] as? String else {
                failures.withLock { $0.append("no signedPayload in \(String(decoding: body, as: UTF8.self))") }
                return
            }
            let verified = try Fixture.verifier().verifyRealtimeRequest(jws)
            state.withLock { $0.append(verified.payload) }
        } catch {
            failures.withLock { $0.append("\(error)") }
        }
    }

    var verified: [RealtimeRequest] { state.withLock { $0 } }
    var rejected: [String] { failures.withLock { $0 } }
}

/// The performance test: the fake calls the configured endpoint with signed realtime requests
/// and measures it, as Apple's sandbox does.
@Suite("Retention Messaging performance test")
struct RetentionMessagingPerformanceTestTests {
    static let answer = LoopbackEndpoint.Answer(body: Array(#"{"message":{"messageIdentifier":"6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c01"}}"#.utf8))

    @Test("Initiate Performance Test and its result: the endpoint gets verified realtime requests; PENDING while it runs, then PASS")
    func passes() async throws {
        let gate = Gate()
        let received = RealtimeRequests()
        try await LoopbackEndpoint.run(respond: { body in
            received.record(body)
            await gate.wait()
            return Self.answer
        }) { url in
            try await Fixture.withFake(configure: {
                $0.retention.performanceTestSettings = .init(
                    maxConcurrentRequests: 3, totalRequests: 12, responseTimeThreshold: 30_000, successRateThreshold: 95)
            }) { fake, client in
                try await client.configureRealtimeURL(url)
                let started = try await client.initiatePerformanceTest(originalTransactionId: "2000000100")
                let request = try #require(fake.requests.last)
                #expect(request.method == "POST" && request.path == "/inApps/v1/messaging/performanceTest")
                #expect(request.bodyJSON as NSDictionary? == ["originalTransactionId": "2000000100"] as NSDictionary)
                let requestId = try #require(started.requestId)
                #expect(started.config?.totalRequests == 12 && started.config?.maxConcurrentRequests == 3)
                #expect(started.config?.responseTimeThreshold == 30_000 && started.config?.successRateThreshold == 95)

                // The endpoint holds every request: the test is still running.
                let running = try await client.performanceTestResult(requestId: requestId)
                #expect(fake.requests.last?.path == "/inApps/v1/messaging/performanceTest/result/\(requestId)")
                #expect(running.result == .pending && running.numPending == 12)
                let second = try await #require(throws: AppStoreServerAPIError.self) {
                    try await client.initiatePerformanceTest(originalTransactionId: "2000000100")
                }
                #expect(second.apiErrorCode == .existingPerformanceTestRun && second.httpStatus == 400 && second.attempts == 1)

                gate.open()
                await fake.retention.performanceTestFinished(requestId)
                let result = try await client.performanceTestResult(requestId: requestId)
                #expect(result.result == .pass && result.successRate == 100 && result.numPending == 0)
                #expect(result.target == url && (result.failures ?? [:]).isEmpty)
                let times = try #require(result.responseTimes)
                let (p50, p99) = (try #require(times.p50), try #require(times.p99))
                #expect(p50 <= p99 && p99 < 30_000)
                #expect(fake.retention.passedPerformanceTest)
            }
        }
        #expect(received.rejected.isEmpty, "\(received.rejected)")
        #expect(received.verified.count == 12)
        #expect(received.verified.allSatisfy {
            $0.originalTransactionId == "2000000100" && $0.productId == "com.receiptkit.monthly" && $0.environment == .sandbox
                && $0.appAppleId == 1_234_567_890
        })
        #expect(Set(received.verified.compactMap(\.requestIdentifier)).count == 12)
    }

    @Test("an endpoint that answers 500, or too slowly, fails the test: FAIL, with the failures by Apple's sendAttemptResult")
    func fails() async throws {
        try await LoopbackEndpoint.run(respond: { _ in LoopbackEndpoint.Answer(status: 500, body: Array("{}".utf8)) }) { url in
            // A threshold no answer misses on a busy machine: every failure is the status's (the
            // threshold's own failure is the next case's).
            try await Fixture.withFake(configure: {
                $0.retention.performanceTestSettings = .init(totalRequests: 4, responseTimeThreshold: 30_000)
            }) { fake, client in
                try await client.configureRealtimeURL(url)
                let requestId = try #require(try await client.initiatePerformanceTest(originalTransactionId: "2000000100").requestId)
                await fake.retention.performanceTestFinished(requestId)
                let result = try await client.performanceTestResult(requestId: requestId)
                #expect(result.result == .fail && result.successRate == 0)
                #expect(result.failures == ["UNSUCCESSFUL_HTTP_RESPONSE_CODE": 4])
                #expect(!fake.retention.passedPerformanceTest)
            }
        }
        let gate = Gate()
        try await LoopbackEndpoint.run(respond: { _ in
            await gate.wait()
            return Self.answer
        }) { url in
            try await Fixture.withFake(configure: {
                $0.retention.performanceTestSettings = .init(maxConcurrentRequests: 2, totalRequests: 2, responseTimeThreshold: 100)
            }) { fake, client in
                try await client.configureRealtimeURL(url)
                let requestId = try #require(try await client.initiatePerformanceTest(originalTransactionId: "2000000100").requestId)
                // The endpoint answers only after the test has given up on it.
                await fake.retention.performanceTestFinished(requestId)
                gate.open()
                let result = try await client.performanceTestResult(requestId: requestId)
                #expect(result.result == .fail && result.failures == ["TIMED_OUT": 2])
            }
        }
    }

    @Test("Initiate Performance Test's refusals: no realtime URL, a transaction id not a subscription's original, unknown test ids")
    func refusals() async throws {
        try await Fixture.withFake { _, client in
            func refusal(_ id: String) async throws -> AppStoreServerAPIError {
                try await #require(throws: AppStoreServerAPIError.self) { try await client.initiatePerformanceTest(originalTransactionId: id) }
            }
            #expect(try await refusal("2000000100").apiErrorCode == .invalidPerformanceTestRequest)
            try await client.configureRealtimeURL("https://receiptkit.example/retention")
            #expect(try await refusal("2999999999").apiErrorCode == .invalidTransactionId)
            #expect(try await refusal("not-a-number").apiErrorCode == .invalidTransactionId)
            #expect(try await refusal("2000000105").apiErrorCode == .transactionIdNotOriginalTransactionId)
            #expect(try await refusal("2000000200").apiErrorCode == .invalidPerformanceTestRequest)
            let unknown = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.performanceTestResult(requestId: RetentionIds.unknown)
            }
            #expect(unknown.apiErrorCode == .performanceTestRunNotFound && unknown.httpStatus == 404)
            let invalid = try await #require(throws: AppStoreServerAPIError.self) { try await client.performanceTestResult(requestId: "42") }
            #expect(invalid.apiErrorCode == .invalidRequestId && invalid.httpStatus == 400)
        }
    }
}

/// Retries as for the rest of the API: reads and idempotent requests after a 5xx, every request
/// after a 429.
@Suite("Retention Messaging retries")
struct RetentionMessagingRetryTests {
    @Test("429 with Apple's RateLimitExceededError: retried, then done; on every attempt: rate_limited")
    func rateLimited() async throws {
        try await Fixture.withFake { fake, client in
            fake.enqueue(.apiError(status: 429, errorCode: 4_290_000, errorMessage: "Rate limit exceeded."), path: "/inApps/v1/messaging/message/")
            try await client.uploadMessage(RetentionIds.uuid(RetentionIds.message), UploadMessageRequestBody(header: "h", body: "b"))
            #expect(fake.requests.count == 2 && fake.requests.allSatisfy { $0.method == "PUT" })
            for _ in 0..<3 {
                fake.enqueue(.apiError(status: 429, errorCode: 4_290_000, errorMessage: "Rate limit exceeded."), path: "/inApps/v1/messaging/image/list")
            }
            let error = try await #require(throws: AppStoreServerAPIError.self) { try await client.imageList() }
            #expect(error.code == .rateLimited && error.apiErrorCode == .rateLimitExceeded && error.attempts == 3)
        }
    }

    @Test("a 5xx is retried for lists and idempotent configuration, not for uploads and deletions Apple says are not idempotent")
    func serverErrors() async throws {
        try await Fixture.withFake { fake, client in
            fake.enqueue(.status(500), path: "/inApps/v1/messaging/image/")
            let upload = try await #require(throws: AppStoreServerAPIError.self) {
                try await client.uploadImage(RetentionIds.uuid(RetentionIds.image), RetentionImage(
                    png: TestPNG.make(width: 1024, height: 1024), size: .bulletPoint))
            }
            #expect(upload.code == .serverError && upload.attempts == 1)
            fake.enqueue(.status(503), path: "/inApps/v1/messaging/message/list")
            #expect(try await client.messageList().messageIdentifiers?.isEmpty == true)
            fake.enqueue(.status(502), path: "/inApps/v1/messaging/realtime/url")
            try await client.configureRealtimeURL("https://receiptkit.example/retention")
            fake.enqueue(.status(500), path: "/inApps/v1/messaging/realtime/url")
            let delete = try await #require(throws: AppStoreServerAPIError.self) { try await client.deleteRealtimeURL() }
            #expect(delete.code == .serverError && delete.attempts == 1)
            #expect(fake.requests.map(\.method) == ["PUT", "GET", "GET", "PUT", "PUT", "DELETE"])
        }
    }
}

/// Apple's JSON read and written back: an enumeration value this version does not know keeps
/// its raw string.
@Suite("Retention Messaging models")
struct RetentionMessagingModelTests {
    @Test("unknown states, sizes and results decode raw, and encode back as Apple wrote them")
    func unknownValues() throws {
        let images = try JSONDecoder().decode(GetImageListResponse.self, from: Data(#"""
            {"imageIdentifiers":[{"imageIdentifier":"A1B2C3D4-E5F6-7890-A1B2-C3D4E5F67890","imageState":"IN_REVIEW","imageSize":"FULL_SIZE"}]}
            """#.utf8))
        let item = try #require(images.imageIdentifiers?.first)
        #expect(item.rawImageState == "IN_REVIEW" && item.imageState == nil && item.imageSize == .fullSize)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(images), as: UTF8.self)
            == #"{"imageIdentifiers":[{"imageIdentifier":"A1B2C3D4-E5F6-7890-A1B2-C3D4E5F67890","imageSize":"FULL_SIZE","imageState":"IN_REVIEW"}]}"#)
        let result = try JSONDecoder().decode(PerformanceTestResultResponse.self, from: Data(#"""
            {"config":{"maxConcurrentRequests":10,"totalRequests":100,"totalDuration":60000,"responseTimeThreshold":700,"successRateThreshold":95},
             "target":"https://example.com/retention","result":"PAUSED","successRate":98,"numPending":0,
             "responseTimes":{"average":120,"p50":100,"p90":200,"p95":250,"p99":400},"failures":{"TIMED_OUT":1,"NO_RESPONSE":1}}
            """#.utf8))
        #expect(result.rawResult == "PAUSED" && result.result == nil && result.failures == ["TIMED_OUT": 1, "NO_RESPONSE": 1])
        #expect(result.config?.responseTimeThreshold == 700 && result.responseTimes?.p99 == 400)
        let body = UploadMessageRequestBody(header: "h", body: "b", headerPosition: .aboveBody)
        #expect(String(decoding: try encoder.encode(body), as: UTF8.self) == #"{"body":"b","header":"h","headerPosition":"ABOVE_BODY"}"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(BulletPoint.self, from: Data(#"{"text":"t","imageIdentifier":"x","altText":"a"}"#.utf8)) }
    }
}
