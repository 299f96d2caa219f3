import AppStoreServerAPIFake
import Foundation
import Testing

/// The built `appstore-api messaging …` against the fake App Store Server API: each subcommand
/// prints Apple's answer as one JSON object (`{}` for an empty 200), exits 0, 2 for Apple's error
/// (its `errorCode` on standard error), 64 for bad arguments, 66 for an unreadable file.
/// Serialized: each test starts the command many times, and the machine is shared.
@Suite("appstore-api messaging", .serialized)
struct RetentionMessagingCommandTests {
    func messaging(_ arguments: [String], _ baseURL: String) async throws -> Command.Result {
        try await Command.appstoreAPI(["messaging"] + arguments, baseURL: baseURL)
    }

    /// The one JSON object a successful subcommand printed.
    func object(_ result: Command.Result) throws -> [String: Any] {
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try result.objects()
        #expect(objects.count == 1)
        return try #require(objects.first)
    }

    @Test("image upload, list, delete: {} and Apple's list; a bad image is 64 before sending, Apple's 409 and 404 exit 2")
    func images() async throws {
        let fake = try Fixture.fake()
        let fullSize = try TestPNG.file("full.png", TestPNG.make(width: 3840, height: 300))
        let bullet = try TestPNG.file("bullet.png", TestPNG.make(width: 1024, height: 1024))
        try await fake.run { baseURL in
            let upload = try await messaging(["image", "upload", RetentionIds.image, fullSize], baseURL)
            #expect(try object(upload).isEmpty)
            let request = try #require(fake.requests.last)
            #expect(request.method == "PUT" && request.path == "/inApps/v1/messaging/image/\(RetentionIds.image)")
            #expect(request.queryValues("imageSize") == ["FULL_SIZE"] && request.contentType == "image/png")
            #expect(request.body == Array(try Data(contentsOf: URL(fileURLWithPath: fullSize))))
            #expect(request.authorizationFailure == nil && request.claims["bid"] == Fixture.bundleId)
            let bulletUpload = try await messaging(["image", "upload", RetentionIds.bullet, bullet, "--size", "bullet_point"], baseURL)
            #expect(try object(bulletUpload).isEmpty)
            #expect(fake.requests.last?.queryValues("imageSize") == ["BULLET_POINT"])

            let list = try object(try await messaging(["image", "list"], baseURL))
            let items = try #require(list["imageIdentifiers"] as? [[String: Any]])
            #expect(items.map { $0["imageIdentifier"] as? String } == [RetentionIds.image, RetentionIds.bullet])
            #expect(items.map { $0["imageSize"] as? String } == ["FULL_SIZE", "BULLET_POINT"])
            #expect(items.allSatisfy { $0["imageState"] as? String == "APPROVED" })

            let requests = fake.requests.count
            let wrongSize = try await messaging(["image", "upload", RetentionIds.unknown, bullet], baseURL)
            #expect(wrongSize.status == 64 && wrongSize.stderr.contains("invalid_image"))
            #expect(wrongSize.stderr.contains("3840 pixels wide and 160 to 2160 pixels high"))
            let notUUID = try await messaging(["image", "upload", "hero", fullSize], baseURL)
            #expect(notUUID.status == 64 && notUUID.stderr.contains("UUID"))
            let badSize = try await messaging(["image", "upload", RetentionIds.unknown, fullSize, "--size", "HUGE"], baseURL)
            #expect(badSize.status == 64 && badSize.stderr.contains("FULL_SIZE or BULLET_POINT"))
            let missing = try await messaging(["image", "upload", RetentionIds.unknown, "/nonexistent/hero.png"], baseURL)
            #expect(missing.status == 66 && missing.stderr.contains("cannot read"))
            #expect(fake.requests.count == requests)

            let again = try await messaging(["image", "upload", RetentionIds.image, fullSize], baseURL)
            #expect(again.status == 2 && again.stdout.isEmpty && again.stderr.contains("errorCode 4090000"))
            #expect(try object(try await messaging(["image", "delete", RetentionIds.bullet], baseURL)).isEmpty)
            #expect(fake.requests.last?.method == "DELETE")
            let gone = try await messaging(["image", "delete", RetentionIds.bullet], baseURL)
            #expect(gone.status == 2 && gone.stderr.contains("api_error") && gone.stderr.contains("errorCode 4040014"))
        }
    }

    @Test("message upload with an image, a header position and bullets sends Apple's body; list, delete; bad options are 64, Apple's refusal 2")
    func messages() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let upload = try await messaging([
                "message", "upload", RetentionIds.message, "--header", "Before you go", "--body", "Your plan keeps every feature.",
                "--image", RetentionIds.image, "--alt", "A mountain at dawn", "--header-position", "above_image",
                "--bullet", "Offline maps:\(RetentionIds.bullet):A map",
                "--bullet", "Note: two people:\(RetentionIds.bullet):Icon: two people",
            ], baseURL)
            #expect(try object(upload).isEmpty)
            let request = try #require(fake.requests.last)
            #expect(request.method == "PUT" && request.path == "/inApps/v1/messaging/message/\(RetentionIds.message)")
            #expect(request.bodyJSON as NSDictionary? == [
                "header": "Before you go", "body": "Your plan keeps every feature.",
                "image": ["imageIdentifier": RetentionIds.image, "altText": "A mountain at dawn"],
                "headerPosition": "ABOVE_IMAGE",
                "bulletPoints": [
                    ["text": "Offline maps", "imageIdentifier": RetentionIds.bullet, "altText": "A map"],
                    ["text": "Note: two people", "imageIdentifier": RetentionIds.bullet, "altText": "Icon: two people"],
                ],
            ] as NSDictionary)
            let plain = try await messaging(
                ["message", "upload", RetentionIds.otherMessage, "--header", "Stay for less", "--body", "Half price."], baseURL)
            #expect(try object(plain).isEmpty)
            #expect(fake.requests.last?.bodyJSON as NSDictionary? == ["header": "Stay for less", "body": "Half price."] as NSDictionary)

            let list = try object(try await messaging(["message", "list"], baseURL))
            let items = try #require(list["messageIdentifiers"] as? [[String: Any]])
            #expect(items.map { $0["messageIdentifier"] as? String } == [RetentionIds.message, RetentionIds.otherMessage])
            #expect(items.allSatisfy { $0["messageState"] as? String == "APPROVED" })

            let requests = fake.requests.count
            for arguments in [
                ["--image", RetentionIds.image], ["--header-position", "BELOW"], ["--bullet", "no image id:alt"],
            ] {
                let bad = try await messaging(
                    ["message", "upload", RetentionIds.unknown, "--header", "h", "--body", "b"] + arguments, baseURL)
                #expect(bad.status == 64, "\(arguments): \(bad.stderr)")
            }
            #expect(fake.requests.count == requests)
            let tooLong = try await messaging(
                ["message", "upload", RetentionIds.unknown, "--header", String(repeating: "h", count: 67), "--body", "b"], baseURL)
            #expect(tooLong.status == 2 && tooLong.stderr.contains("errorCode 4000162"))

            #expect(try object(try await messaging(["message", "delete", RetentionIds.otherMessage], baseURL)).isEmpty)
            #expect(fake.requests.last?.method == "DELETE" && fake.requests.last?.path == "/inApps/v1/messaging/message/\(RetentionIds.otherMessage)")
            let gone = try await messaging(["message", "delete", RetentionIds.otherMessage], baseURL)
            #expect(gone.status == 2 && gone.stderr.contains("errorCode 4040015"))
        }
    }

    @Test("default set, get, delete: an unknown message is Apple's 404 (exit 2); {\"messageIdentifier\"} once set")
    func defaults() async throws {
        let fake = try Fixture.fake()
        try await fake.run { baseURL in
            let unknown = try await messaging(["default", "set", "com.receiptkit.monthly", "en-US", RetentionIds.unknown], baseURL)
            #expect(unknown.status == 2 && unknown.stderr.contains("errorCode 4040015"))
            _ = try object(try await messaging(["message", "upload", RetentionIds.message, "--header", "h", "--body", "b"], baseURL))
            #expect(try object(try await messaging(["default", "set", "com.receiptkit.monthly", "en-US", RetentionIds.message], baseURL)).isEmpty)
            #expect(fake.requests.last?.path == "/inApps/v1/messaging/default/com.receiptkit.monthly/en-US")
            #expect(fake.requests.last?.bodyJSON as NSDictionary? == ["messageIdentifier": RetentionIds.message] as NSDictionary)
            let got = try object(try await messaging(["default", "get", "com.receiptkit.monthly", "en-US"], baseURL))
            #expect(got as NSDictionary == ["messageIdentifier": RetentionIds.message] as NSDictionary)
            #expect(try object(try await messaging(["default", "delete", "com.receiptkit.monthly", "en-US"], baseURL)).isEmpty)
            #expect(fake.requests.last?.method == "DELETE")
            let none = try await messaging(["default", "get", "com.receiptkit.monthly", "en-US"], baseURL)
            #expect(none.status == 2 && none.stderr.contains("errorCode 4040020"))
            let badId = try await messaging(["default", "set", "com.receiptkit.monthly", "en-US", "welcome"], baseURL)
            #expect(badId.status == 64)
        }
    }

    @Test("realtime-url set, get, delete; performance-test start and result against a loopback endpoint: PASS exits 0, FAIL 2")
    func realtimeAndPerformanceTest() async throws {
        let fake = try Fixture.fake()
        fake.retention.performanceTestSettings = .init(totalRequests: 4)
        try await LoopbackEndpoint.run(respond: { _ in RetentionMessagingPerformanceTestTests.answer }) { url in
            try await fake.run { baseURL in
                let none = try await messaging(["realtime-url", "get"], baseURL)
                #expect(none.status == 2 && none.stderr.contains("errorCode 4040021"))
                #expect(try object(try await messaging(["realtime-url", "set", url], baseURL)).isEmpty)
                #expect(fake.requests.last?.bodyJSON as NSDictionary? == ["realtimeURL": url] as NSDictionary)
                #expect(try object(try await messaging(["realtime-url", "get"], baseURL)) as NSDictionary == ["realtimeURL": url] as NSDictionary)

                let started = try object(try await messaging(["performance-test", "start", "2000000100"], baseURL))
                #expect(fake.requests.last?.bodyJSON as NSDictionary? == ["originalTransactionId": "2000000100"] as NSDictionary)
                let requestId = try #require(started["requestId"] as? String)
                #expect((started["config"] as? [String: Any])?["totalRequests"] as? Int == 4)
                await fake.retention.performanceTestFinished(requestId)
                let result = try object(try await messaging(["performance-test", "result", requestId], baseURL))
                #expect(result["result"] as? String == "PASS" && result["successRate"] as? Int == 100 && result["target"] as? String == url)
                #expect(fake.requests.last?.path == "/inApps/v1/messaging/performanceTest/result/\(requestId)")

                #expect(try object(try await messaging(["realtime-url", "delete"], baseURL)).isEmpty)
                #expect(fake.requests.last?.method == "DELETE" && fake.requests.last?.path == "/inApps/v1/messaging/realtime/url")
                let deleted = try await messaging(["realtime-url", "get"], baseURL)
                #expect(deleted.status == 2 && deleted.stderr.contains("errorCode 4040021"))
                let unknown = try await messaging(["performance-test", "result", RetentionIds.unknown], baseURL)
                #expect(unknown.status == 2 && unknown.stderr.contains("errorCode 4040018"))
            }
        }
        try await LoopbackEndpoint.run(respond: { _ in LoopbackEndpoint.Answer(status: 503, body: []) }) { url in
            try await fake.run { baseURL in
                _ = try object(try await messaging(["realtime-url", "set", url], baseURL))
                let started = try object(try await messaging(["performance-test", "start", "2000000100"], baseURL))
                let requestId = try #require(started["requestId"] as? String)
                await fake.retention.performanceTestFinished(requestId)
                let failed = try await messaging(["performance-test", "result", requestId], baseURL)
                #expect(failed.status == 2 && failed.stderr.contains("performance_test_failed"))
                let printed = try #require(try failed.objects().first)
                #expect(printed["result"] as? String == "FAIL")
                #expect(printed["failures"] as? [String: Int] == ["UNSUCCESSFUL_HTTP_RESPONSE_CODE": 4])
            }
        }
    }
}
