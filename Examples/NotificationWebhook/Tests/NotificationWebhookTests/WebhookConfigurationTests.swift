import NotificationWebhook
import ReceiptKit
import Testing

@Suite("WebhookConfiguration from the environment")
struct WebhookConfigurationTests {
    @Test("the test environment: claims, root files, defaults for HOST and PORT")
    func testEnvironment() throws {
        let configuration = try WebhookConfiguration(environment: Vectors.environment)
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.verifier.bundleId == "com.receiptkit.example")
        #expect(configuration.verifier.appAppleId == 1234567890)
        #expect(configuration.verifier.environment == .sandbox)
        #expect(configuration.verifier.validationTime == .signedDate)
        #expect(configuration.verifier.anchors.rootCertificateFingerprints.count == 2)
        #expect(configuration.verifier.anchors.rootCertificateFingerprints.first == (try Vectors.testRootSHA256()))
    }

    @Test("HOST and PORT")
    func hostAndPort() throws {
        var environment = Vectors.environment
        environment["HOST"] = "0.0.0.0"
        environment["PORT"] = "9000"
        let configuration = try WebhookConfiguration(environment: environment)
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 9000)
    }

    @Test("without a root file or pin, Apple's built-in pins")
    func applePins() throws {
        let configuration = try WebhookConfiguration(environment: [
            "RECEIPTKIT_BUNDLE_ID": "com.example.app", "RECEIPTKIT_APP_APPLE_ID": "1234567890",
            "RECEIPTKIT_ENVIRONMENT": "Production",
        ])
        #expect(configuration.verifier.anchors.rootCertificateFingerprints.isEmpty)
        #expect(configuration.verifier.environment == .production)
    }

    @Test(
        "a missing or wrong variable is refused, naming it",
        arguments: [
            ("RECEIPTKIT_BUNDLE_ID", nil),
            ("RECEIPTKIT_BUNDLE_ID", " "),
            ("RECEIPTKIT_ENVIRONMENT", nil),
            ("RECEIPTKIT_ENVIRONMENT", "production"),
            ("RECEIPTKIT_APP_APPLE_ID", "abc"),
            ("RECEIPTKIT_APP_APPLE_ID", "-1"),
            ("RECEIPTKIT_ROOT_FILE", "/nonexistent/root.der"),
            ("RECEIPTKIT_ROOT_FILE", Vectors.path("pki/fingerprints.json")),  // not a certificate
            ("RECEIPTKIT_PIN_SHA256", "abcd"),
            ("PORT", "http"),
            ("PORT", "70000"),
        ] as [(String, String?)])
    func refused(variable: String, value: String?) throws {
        var environment = Vectors.environment
        environment[variable] = value
        let error = #expect(throws: WebhookConfigurationError.self) {
            try WebhookConfiguration(environment: environment)
        }
        #expect(error?.message.contains(variable) == true)
    }

    @Test("Production needs the App Apple ID, as in Apple's libraries")
    func productionNeedsAppAppleId() throws {
        var environment = Vectors.environment
        environment["RECEIPTKIT_ENVIRONMENT"] = "Production"
        environment["RECEIPTKIT_APP_APPLE_ID"] = nil
        let error = #expect(throws: WebhookConfigurationError.self) {
            try WebhookConfiguration(environment: environment)
        }
        #expect(error?.message.contains("RECEIPTKIT_APP_APPLE_ID") == true)
    }
}
