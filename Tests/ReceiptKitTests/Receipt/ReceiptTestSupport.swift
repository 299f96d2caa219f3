import Foundation
import ReceiptKit
import Testing

/// `verify-receipt` arguments as the receipt manifest uses them, turned into library calls.
struct ReceiptArguments {
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
                configuration.validationTime = text == "now" ? .now : .fixed(try #require(Timestamp(rfc3339: text)))
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

/// The real receipts in `../shared/vectors/receipts`, with the facts its README states.
enum SharedReceipts {
    struct AppStore: Sendable, CustomTestStringConvertible {
        let file: String
        let bundleId: String
        let purchases: Int
        let created: String
        var testDescription: String { file }
    }

    static let appStore: [AppStore] = [
        AppStore(file: "tpinappreceipt-sandbox-g5.der", bundleId: "dev.bonzer.weeka.app", purchases: 2,
                 created: "2025-12-26T18:39:47.000Z"),
        AppStore(file: "tpinappreceipt-sandbox-legacy-187.der", bundleId: "com.nutcall.alert", purchases: 187,
                 created: "2020-05-06T18:28:49.000Z"),
        AppStore(file: "revenuecat-sandbox-sample1.b64", bundleId: "com.revenuecat.sampleapp", purchases: 9,
                 created: "2020-07-22T17:39:08.000Z"),
        AppStore(file: "kvitto-sandbox-2015.der", bundleId: "com.cocoanetics.EmmiView", purchases: 6,
                 created: "2015-05-25T15:22:10.000Z"),
        AppStore(file: "goapplereceipt-sandbox-g7.der", bundleId: "com.devsisters.gb", purchases: 1,
                 created: "2023-02-21T07:50:17.000Z"),
    ]

    static let xcode = ["tpinappreceipt-xcode.der", "xcode-with-transaction.der", "xcode-empty.b64", "kvitto-storekittest.der"]

    /// The receipt's bytes: `.der` as is, `.b64` decoded.
    static func bytes(_ file: String) throws -> [UInt8] {
        if file.hasSuffix(".b64") {
            let text = try Fixtures.sharedVectorText("receipts/" + file)
            return Array(try #require(Data(base64Encoded: text)))
        }
        return try Fixtures.sharedVector("receipts/" + file)
    }

    /// Apple Inc. Root and StoreKit certificates from `../shared/vectors/certs`.
    static func certificate(_ name: String) throws -> [UInt8] {
        try Fixtures.sharedVector("certs/" + name)
    }
}

/// Flips `mask` into every byte of `receipt` in turn and returns the offsets at which the changed
/// receipt still verified.
func offsetsStillVerifying(_ receipt: [UInt8], mask: UInt8, with verifier: AppStoreVerifier) -> [Int] {
    var accepted: [Int] = []
    var changed = receipt
    for offset in receipt.indices {
        changed[offset] ^= mask
        if (try? verifier.verifyReceipt(changed)) != nil {
            accepted.append(offset)
        }
        changed[offset] ^= mask
    }
    return accepted
}
