import CReceiptKitOpenSSL
import Foundation
import ReceiptKitTestSupport

/// Distinct, genuine inputs signed under the test PKI's leaf. The archive of transactions
/// measures `--state`: `subscriptions` customers, each with `renewals` monthly renewals sharing
/// one original transaction id. Duplicates would cost the ledger nothing, so only distinct
/// transactions measure what it keeps. The notifications measure `verifyNotification`: three
/// signatures each, none repeated.
struct TransactionArchive {
    let header: String
    let key: OpaquePointer

    /// Loads the test PKI's chain and leaf key from `pki` (`TestVectors/pki`).
    init(pki: String) throws {
        let chain = try ["leaf.der", "intermediate.der", "root.der"].map {
            try Data(contentsOf: URL(fileURLWithPath: "\(pki)/\($0)")).base64EncodedString()
        }
        let json = "{\"alg\":\"ES256\",\"x5c\":[\(chain.map { "\"\($0)\"" }.joined(separator: ","))]}"
        header = Self.base64URL(Array(json.utf8))
        let pem = try Data(contentsOf: URL(fileURLWithPath: "\(pki)/leaf.key"))
        let loaded: OpaquePointer? = pem.withUnsafeBytes { buffer in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else { throw CocoaError(.fileReadCorruptFile) }
        key = loaded
    }

    /// Writes the archive, one JWS per line, and returns how many it wrote.
    func write(to path: String, subscriptions: Int, renewals: Int) throws -> Int {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let month: Int64 = 30 * 86_400_000
        let start: Int64 = 1_704_067_200_000  // 2024-01-01, inside the test leaf's validity
        var chunk: [UInt8] = []
        for subscription in 0..<subscriptions {
            let original = 2_000_000_000_000_000 + Int64(subscription) * Int64(renewals)
            let token = String(format: "%08x-0000-4000-8000-%012x", subscription, subscription)
            for renewal in 0..<renewals {
                let purchased = start + Int64(subscription % 30) * 86_400_000 + Int64(renewal) * month
                let payload = """
                    {"transactionId":"\(original + Int64(renewal))","originalTransactionId":"\(original)",\
                    "bundleId":"com.receiptkit.example","productId":"com.receiptkit.example.premium.monthly",\
                    "subscriptionGroupIdentifier":"21581234","purchaseDate":\(purchased),\
                    "originalPurchaseDate":\(start),"expiresDate":\(purchased + month),"quantity":1,\
                    "type":"Auto-Renewable Subscription","appAccountToken":"\(token)",\
                    "inAppOwnershipType":"PURCHASED","signedDate":\(purchased),"environment":"Sandbox",\
                    "transactionReason":"\(renewal == 0 ? "PURCHASE" : "RENEWAL")","storefront":"USA",\
                    "storefrontId":"143441","price":9990,"currency":"USD"}
                    """
                chunk.append(contentsOf: try sign(payload).utf8)
                chunk.append(0x0A)
                if chunk.count > 1 << 20 {
                    handle.write(Data(chunk))
                    chunk.removeAll(keepingCapacity: true)
                }
            }
        }
        handle.write(Data(chunk))
        return subscriptions * renewals
    }

    /// Writes `count` distinct App Store Server Notifications V2, one per line, and returns how
    /// many it wrote: each a SUBSCRIBED notification whose `data` nests its own transaction and
    /// renewal info, three ES256 signatures in all (for the benchmarks and
    /// `Server/scripts/crash-test.sh`). `bodies` writes each as a webhook body, `{"signedPayload":"…"}`; otherwise the
    /// `signedPayload` JWS alone.
    func writeNotifications(to path: String, count: Int, bodies: Bool) throws -> Int {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let day: Int64 = 86_400_000
        let start: Int64 = 1_748_779_200_000  // 2025-06-01T12:00:00Z, inside the test PKI's validity
        let product = "com.receiptkit.example.premium.monthly"
        var chunk: [UInt8] = []
        for index in 0..<count {
            let original = "\(3_000_000_000_000_000 + Int64(index))"
            let signed = start + Int64(index) * 1000
            let token = String(format: "%08x-0000-4000-8000-%012x", index, index)
            let uuid = String(format: "%08x-1111-4000-9000-%012x", index, index)
            let transaction = """
                {"transactionId":"\(original)","originalTransactionId":"\(original)",\
                "bundleId":"com.receiptkit.example","productId":"\(product)",\
                "subscriptionGroupIdentifier":"21581234","purchaseDate":\(signed),\
                "originalPurchaseDate":\(signed),"expiresDate":\(signed + 30 * day),"quantity":1,\
                "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED",\
                "signedDate":\(signed),"environment":"Sandbox","transactionReason":"PURCHASE",\
                "storefront":"USA","storefrontId":"143441","price":9990,"currency":"USD",\
                "appAccountToken":"\(token)"}
                """
            let renewal = """
                {"originalTransactionId":"\(original)","autoRenewProductId":"\(product)",\
                "productId":"\(product)","autoRenewStatus":1,"signedDate":\(signed),\
                "environment":"Sandbox","renewalDate":\(signed + 30 * day)}
                """
            let notification = """
                {"notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY","notificationUUID":"\(uuid)",\
                "data":{"appAppleId":1234567890,"bundleId":"com.receiptkit.example","bundleVersion":"42",\
                "environment":"Sandbox","signedTransactionInfo":"\(try sign(transaction))",\
                "signedRenewalInfo":"\(try sign(renewal))"},"version":"2.0","signedDate":\(signed)}
                """
            let signedPayload = try sign(notification)
            chunk.append(contentsOf: (bodies ? "{\"signedPayload\":\"\(signedPayload)\"}" : signedPayload).utf8)
            chunk.append(0x0A)
            if chunk.count > 1 << 20 {
                handle.write(Data(chunk))
                chunk.removeAll(keepingCapacity: true)
            }
        }
        handle.write(Data(chunk))
        return count
    }

    /// A version 4 UUID drawn from two numbers by SplitMix64's step and mixing: the same numbers
    /// give the same UUID; different ones collide with a chance of about 2⁻⁶⁰ a pair.
    static func uuid(_ first: Int, _ second: Int) -> String {
        func mix(_ value: UInt64) -> UInt64 { SplitMix64.mix(value &+ SplitMix64.increment) }
        let high = mix(UInt64(first) &* 0x1_0000_0001 ^ UInt64(second)), low = mix(high ^ UInt64(second))
        return String(
            format: "%08llx-%04llx-4%03llx-%04llx-%012llx",
            high >> 32, high >> 16 & 0xFFFF, high & 0x0FFF, 0x8000 | low >> 48 & 0x3FFF, low & 0xFFFF_FFFF_FFFF)
    }

    /// The transaction id of subscription `key`'s period `period` (`key` below 1,000,000).
    static func transactionId(key: Int, period: Int) -> Int64 {
        4_000_000_000_000_000 + Int64(period) * 1_000_000 + Int64(key)
    }

    /// Writes `count` Get Retention Message request bodies (`{"signedPayload": …}`), one a line,
    /// for `Server/scripts/benchmark-retention.sh`: request `i` asks about subscription
    /// `i % (keys + keys / 3)` of ``writeRenewals(to:keys:firstKey:first:count:)``'s numbering, so
    /// that a quarter of them name a subscription numbered past the `keys` the script stores (one
    /// the server has not seen); each has its own `requestIdentifier`, all are signed at
    /// `signedDate`, and returns how many it wrote.
    func writeRealtimeRequests(to path: String, count: Int, keys: Int, signedDate: Int64) throws -> Int {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let product = "com.receiptkit.example.premium.daily"
        let locales = ["en-US", "fr-FR", "de-DE", "ja-JP"]
        var chunk: [UInt8] = []
        for index in 0..<count {
            let key = index % (keys + keys / 3)
            let request = """
                {"originalTransactionId":"\(Self.transactionId(key: key, period: 0))","appAppleId":1234567890,\
                "productId":"\(product)","userLocale":"\(locales[index % locales.count])",\
                "requestIdentifier":"\(Self.uuid(key, 1_000_000 + index))","environment":"Sandbox","signedDate":\(signedDate)}
                """
            chunk.append(contentsOf: "{\"signedPayload\":\"\(try sign(request))\"}".utf8)
            chunk.append(0x0A)
        }
        handle.write(Data(chunk))
        return count
    }

    /// Writes the notifications of `keys` daily subscriptions (numbered from `firstKey`) periods
    /// `first..<first + count`,
    /// one webhook body per line, period by period (every key's period `n`, then every key's
    /// `n + 1`), and returns how many it wrote: period 0 is a SUBSCRIBED (INITIAL_BUY)
    /// notification, each later one a DID_RENEW, each with its own transaction, renewal info and
    /// UUID. What a mature app receives: a renewal of a key with `first` periods behind it costs
    /// the server what its history makes it cost.
    func writeRenewals(to path: String, keys: Int, firstKey: Int = 0, first: Int, count: Int) throws -> Int {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        // A daily product: 1,000 periods from 2024-01-02 end in 2026, inside the validity of the
        // test PKI's leaf (2024–2026), which a JWS is verified at its signed date against. A
        // month's period would not fit 240 renewals; the cost of a renewal depends on how many
        // came before, not on their length.
        let month: Int64 = 86_400_000
        let start: Int64 = 1_704_153_600_000
        let product = "com.receiptkit.example.premium.daily"
        var chunk: [UInt8] = []
        for period in first..<(first + count) {
            for key in firstKey..<(firstKey + keys) {
                // Transaction ids grow in the order the periods are written, as Apple issues
                // them: a renewal's id is above every earlier period's, so an index of them
                // grows at its right edge, where a key's own numbering would put each renewal
                // on a leaf of its own. A subscription's original id is its first period's.
                let original = Self.transactionId(key: key, period: 0)
                let transactionId = Self.transactionId(key: key, period: period)
                let purchased = start + Int64(period) * month + Int64(key) * 1000
                // Version 4 UUIDs, as an app's appAccountToken and Apple's notificationUUID are:
                // where they are keys of an index, each lands on a leaf of its own, not after
                // the last one written. Drawn from the key and period, so every run posts the same.
                let token = Self.uuid(key, 0)
                let uuid = Self.uuid(key, 1 + period)
                let transaction = """
                    {"transactionId":"\(transactionId)","originalTransactionId":"\(original)",\
                    "webOrderLineItemId":"\(1_000_000_000_000_000 + transactionId)",\
                    "bundleId":"com.receiptkit.example","productId":"\(product)",\
                    "subscriptionGroupIdentifier":"21581234","purchaseDate":\(purchased),\
                    "originalPurchaseDate":\(start + Int64(key) * 1000),"expiresDate":\(purchased + month),"quantity":1,\
                    "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED",\
                    "signedDate":\(purchased),"environment":"Sandbox",\
                    "transactionReason":"\(period == 0 ? "PURCHASE" : "RENEWAL")",\
                    "storefront":"USA","storefrontId":"143441","price":9990,"currency":"USD",\
                    "appAccountToken":"\(token)"}
                    """
                let renewal = """
                    {"originalTransactionId":"\(original)","autoRenewProductId":"\(product)",\
                    "productId":"\(product)","autoRenewStatus":1,"signedDate":\(purchased),\
                    "environment":"Sandbox","renewalDate":\(purchased + month),"recentSubscriptionStartDate":\(start + Int64(key) * 1000)}
                    """
                let type = period == 0 ? "\"notificationType\":\"SUBSCRIBED\",\"subtype\":\"INITIAL_BUY\"" : "\"notificationType\":\"DID_RENEW\""
                let notification = """
                    {\(type),"notificationUUID":"\(uuid)",\
                    "data":{"appAppleId":1234567890,"bundleId":"com.receiptkit.example","bundleVersion":"42",\
                    "environment":"Sandbox","signedTransactionInfo":"\(try sign(transaction))",\
                    "signedRenewalInfo":"\(try sign(renewal))","status":1},"version":"2.0","signedDate":\(purchased)}
                    """
                chunk.append(contentsOf: "{\"signedPayload\":\"\(try sign(notification))\"}".utf8)
                chunk.append(0x0A)
                if chunk.count > 1 << 20 {
                    handle.write(Data(chunk))
                    chunk.removeAll(keepingCapacity: true)
                }
            }
        }
        handle.write(Data(chunk))
        return keys * count
    }

    /// A compact JWS over `payload` with a fresh ES256 signature.
    private func sign(_ payload: String) throws -> String {
        let input = header + "." + Self.base64URL(Array(payload.utf8))
        guard let context = EVP_MD_CTX_new() else { throw CocoaError(.featureUnsupported) }
        defer { EVP_MD_CTX_free(context) }
        var length = 0
        let message = Array(input.utf8)
        guard EVP_DigestSignInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1,
              EVP_DigestSign(context, nil, &length, message, message.count) == 1
        else { throw CocoaError(.featureUnsupported) }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else {
            throw CocoaError(.featureUnsupported)
        }
        return input + "." + Self.base64URL(try Self.rawSignature(Array(der[..<length])))
    }

    /// `r ‖ s`, 32 bytes each, from a DER `Ecdsa-Sig-Value` (short-form lengths: P-256 fits).
    private static func rawSignature(_ der: [UInt8]) throws -> [UInt8] {
        var index = 2
        var raw: [UInt8] = []
        for _ in 0..<2 {
            guard index + 1 < der.count, der[index] == 0x02 else { throw CocoaError(.fileReadCorruptFile) }
            let count = Int(der[index + 1])
            let value = der[(index + 2)..<(index + 2 + count)].drop { $0 == 0 }
            raw += [UInt8](repeating: 0, count: 32 - value.count) + value
            index += 2 + count
        }
        return raw
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
