internal import CReceiptKitServerOpenSSL
import ReceiptKit

/// The signature a webhook carries, in Stripe's scheme: `ReceiptKit-Signature: t=UNIX,v1=HEX`,
/// where `HEX` is the lowercase hex HMAC-SHA256, under the webhook secret, of the decimal
/// `UNIX` seconds, a `.`, and the body's bytes. A receiver recomputes it over the body it read
/// (before parsing it), compares in constant time, and refuses a `t` too far from its clock
/// (`docs/events.md` shows it in Node, Python and PHP). HMAC is OpenSSL's.
package enum WebhookSignature {
    /// The header's value for a body sent at `timestamp`.
    ///
    /// - Parameters:
    ///   - secret: `RECEIPTKIT_WEBHOOK_SECRET`'s bytes.
    ///   - timestamp: Seconds since 1970 when the request is sent.
    ///   - body: The body's bytes, exactly as sent.
    package static func header(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> String {
        "t=\(timestamp),v1=\(Hex.encode(hmacSHA256(key: secret, data: Array("\(timestamp).".utf8) + body)))"
    }

    /// HMAC-SHA256 (RFC 2104) of `data` under `key`.
    package static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let written = key.withUnsafeBufferPointer { key in
            data.withUnsafeBufferPointer { data in
                out.withUnsafeMutableBufferPointer { out in
                    rks_hmac_sha256(key.baseAddress, key.count, data.baseAddress, data.count, out.baseAddress)
                }
            }
        }
        // OpenSSL fails only without memory or without its default provider, where nothing
        // the server does could work.
        precondition(written == 1, "OpenSSL's HMAC-SHA256 failed")
        return out
    }
}
