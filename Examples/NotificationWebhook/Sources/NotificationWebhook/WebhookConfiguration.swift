import Foundation
public import ReceiptKit

/// Where the webhook listens, and what its one shared verifier trusts and checks.
///
/// ``init(environment:)`` reads it from environment variables:
///
/// | variable | meaning |
/// |---|---|
/// | `RECEIPTKIT_BUNDLE_ID` | required: your app's bundle id |
/// | `RECEIPTKIT_ENVIRONMENT` | required: `Production`, `Sandbox`, `Xcode` or `LocalTesting` |
/// | `RECEIPTKIT_APP_APPLE_ID` | your app's App Apple ID; required for `Production` |
/// | `RECEIPTKIT_ROOT_FILE` | root certificates to trust instead of Apple's pins, DER or PEM, comma-separated paths |
/// | `RECEIPTKIT_PIN_SHA256` | SHA-256 fingerprints of roots to trust instead of Apple's pins, comma-separated |
/// | `HOST` | the address to listen on, default `127.0.0.1` |
/// | `PORT` | the port to listen on, default `8080` |
public struct WebhookConfiguration: Sendable {
    /// The address the server binds to.
    public var host: String
    /// The port the server binds to (0: any free port).
    public var port: Int
    /// What the shared ``AppStoreVerifier`` trusts and checks.
    public var verifier: AppStoreVerifier.Configuration

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - host: The address to bind to.
    ///   - port: The port to bind to.
    ///   - verifier: What the verifier trusts and checks.
    public init(host: String = "127.0.0.1", port: Int = 8080, verifier: AppStoreVerifier.Configuration) {
        self.host = host
        self.port = port
        self.verifier = verifier
    }

    /// Reads the configuration from environment variables (see ``WebhookConfiguration``).
    ///
    /// A webhook must not accept another app's notifications, which Apple signs just as well as
    /// yours: the bundle id and the environment are required, and, as in Apple's own libraries,
    /// the App Apple ID too in `Production`.
    ///
    /// - Parameter environment: The process environment, or any dictionary in its shape.
    /// - Throws: ``WebhookConfigurationError`` naming the variable that is missing or wrong.
    public init(environment: [String: String]) throws(WebhookConfigurationError) {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        func list(_ name: String) -> [String] {
            (value(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }

        guard let bundleId = value("RECEIPTKIT_BUNDLE_ID") else {
            throw WebhookConfigurationError("RECEIPTKIT_BUNDLE_ID is required: your app's bundle id")
        }
        guard let environmentName = value("RECEIPTKIT_ENVIRONMENT") else {
            throw WebhookConfigurationError("RECEIPTKIT_ENVIRONMENT is required: Production, Sandbox, Xcode or LocalTesting")
        }
        guard let appStoreEnvironment = AppStoreEnvironment(rawValue: environmentName) else {
            throw WebhookConfigurationError(
                "RECEIPTKIT_ENVIRONMENT is \"\(environmentName)\"; expected Production, Sandbox, Xcode or LocalTesting")
        }
        var appAppleId: Int64?
        if let text = value("RECEIPTKIT_APP_APPLE_ID") {
            guard let number = Int64(text), number > 0 else {
                throw WebhookConfigurationError("RECEIPTKIT_APP_APPLE_ID is \"\(text)\"; expected a positive integer")
            }
            appAppleId = number
        } else if appStoreEnvironment == .production {
            throw WebhookConfigurationError("RECEIPTKIT_APP_APPLE_ID is required when RECEIPTKIT_ENVIRONMENT is Production")
        }

        let rootFiles = list("RECEIPTKIT_ROOT_FILE")
        let pins = list("RECEIPTKIT_PIN_SHA256")
        var anchors = TrustAnchors.apple
        if !rootFiles.isEmpty || !pins.isEmpty {
            let roots = try rootFiles.map { path throws(WebhookConfigurationError) in
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw WebhookConfigurationError("RECEIPTKIT_ROOT_FILE: cannot read \(path)")
                }
                return [UInt8](data)
            }
            do {
                anchors = try TrustAnchors(rootCertificates: roots, pinnedSHA256: pins)
            } catch let error as ReceiptKitError {
                let variable = error.code == .malformedCertificate ? "RECEIPTKIT_ROOT_FILE" : "RECEIPTKIT_PIN_SHA256"
                throw WebhookConfigurationError("\(variable): \(error.message)")
            } catch {
                throw WebhookConfigurationError("RECEIPTKIT_ROOT_FILE or RECEIPTKIT_PIN_SHA256: \(error)")
            }
        }

        let host = value("HOST") ?? "127.0.0.1"
        var port = 8080
        if let text = value("PORT") {
            guard let number = Int(text), (0...65535).contains(number) else {
                throw WebhookConfigurationError("PORT is \"\(text)\"; expected a port number, 0 to 65535")
            }
            port = number
        }
        self.init(
            host: host, port: port,
            verifier: .init(anchors: anchors, bundleId: bundleId, appAppleId: appAppleId, environment: appStoreEnvironment))
    }
}

/// A missing or invalid configuration variable.
public struct WebhookConfigurationError: Error, CustomStringConvertible {
    /// What is wrong, naming the variable.
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
