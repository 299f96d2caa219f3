import Foundation
import ReceiptKit
import Testing

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
