import Foundation
import ReceiptKit
import ReceiptKitFormats
import Testing

/// `verify-receipt` arguments as the manifests use them, turned into library calls: the same
/// configuration the command would build, with the fixed test clock.
struct ManifestArguments {
    var configuration = AppStoreVerifier.Configuration()
    var kind: PayloadKind?
    var verifyReceiptFormat = false

    /// Parses `arguments` (paths relative to the package root).
    init(_ arguments: [String], name: String) throws {
        var roots: [[UInt8]] = []
        var pins: [String] = []
        var index = 0
        func value() throws -> String {
            index += 1
            return try #require(index < arguments.count ? arguments[index] : nil, "\(name): option without value")
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--root": roots.append(try Fixtures.bytes(Fixtures.packageRoot.appendingPathComponent(try value())))
            case "--pin-sha256": pins.append(try value())
            case "--bundle-id": configuration.bundleId = try value()
            case "--app-apple-id": configuration.appAppleId = Int64(try value())
            case "--environment":
                let text = try value()
                let environment: AppStoreEnvironment = try #require(AppStoreEnvironment(rawValue: text))
                configuration.environment = environment
            case "--kind":
                let text = try value()
                let forced: PayloadKind = try #require(PayloadKind(rawValue: text))
                kind = forced
            case "--device-id":
                let text = try value()
                let device: DeviceIdentifier = try #require(DeviceIdentifier(text))
                configuration.deviceIdentifier = device
            case "--max-receipt-size":
                let text = try value()
                configuration.maximumReceiptSize = try #require(Int(text))
            case "--format": verifyReceiptFormat = try value() == "verifyreceipt"
            case "--at":
                let text = try value()
                switch text {
                case "signed": configuration.validationTime = .signedDate
                case "now": configuration.validationTime = .now
                default: configuration.validationTime = .fixed(try #require(Timestamp(rfc3339: text)))
                }
            default:
                Issue.record("\(name): unsupported manifest argument \(arguments[index])")
            }
            index += 1
        }
        if !roots.isEmpty || !pins.isEmpty {
            configuration.anchors = try TrustAnchors(rootCertificates: roots, pinnedSHA256: pins)
        }
    }

    var verifier: AppStoreVerifier {
        AppStoreVerifier(configuration, clock: Fixtures.fixedClock)
    }

    /// The outcome rendered as the CLI would print it (without the input number).
    func render(_ outcome: VerificationOutcome) -> String {
        verifyReceiptFormat
            ? outcome.verifyReceiptJSON(expectedEnvironment: configuration.environment)
            : outcome.json()
    }
}
