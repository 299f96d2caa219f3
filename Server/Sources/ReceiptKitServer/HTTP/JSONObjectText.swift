/// A JSON object ReceiptKit rendered, continued with more members whose values ReceiptKit
/// rendered too: `POST /verifyReceipt`'s answer is ReceiptKit's verifyReceipt body with the
/// service's `latest_receipt_info` and `pending_renewal_info` arrays added. Every other answer is
/// an `Encodable` type written by ``AnswerEncoder``.
struct JSONObjectText {
    private var body: String
    private var isEmpty: Bool

    /// The members of a rendered JSON object, to add more to. `rendered` is text ReceiptKit
    /// wrote: one object, `{` … `}`, with or without a final newline.
    init(extending rendered: String) {
        var text = Substring(rendered)
        while text.last?.isWhitespace == true { text.removeLast() }
        precondition(text.first == "{" && text.last == "}", "not a rendered JSON object")
        text.removeLast()
        body = String(text)
        isEmpty = text.dropFirst().allSatisfy(\.isWhitespace)
    }

    /// The finished object.
    var text: String { body + "}" }

    /// A member whose value is JSON text ReceiptKit rendered (an object or an array).
    mutating func member(_ name: String, json value: String) {
        if !isEmpty { body += "," }
        isEmpty = false
        body += AnswerEncoder.quoted(name) + ":" + value
    }
}
