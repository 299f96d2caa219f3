public import ReceiptKit

extension VerificationOutcome {
    /// The CSV columns, in order, with an `id` column second when `withIDs`.
    ///
    /// - Parameter withIDs: Whether rows carry the caller's id (`verify-receipt --with-ids`).
    public static func csvHeader(withIDs: Bool) -> [String] {
        withIDs ? [csvHeader[0], "id"] + csvHeader.dropFirst() : csvHeader
    }

    /// The CSV columns, in order: one row per transaction.
    public static let csvHeader = [
        "input", "status", "error_code", "kind", "environment", "bundle_id", "product_id", "transaction_id",
        "original_transaction_id", "purchase_date", "expires_date", "revocation_date", "price_milliunits", "currency",
    ]

    /// The outcome as CSV rows (RFC 4180, `\n`-terminated): one per transaction, or a single row
    /// with empty transaction columns for a rejected input or one without transactions.
    ///
    /// - Parameter input: The 1-based input number of the first column.
    /// - Returns: The rows, each ending in a newline.
    public func csvRows(input: Int) -> String {
        csvRows(label: InputLabel(number: input))
    }

    /// The outcome as CSV rows, with the label's `id` as the second column when it has one.
    ///
    /// - Parameter label: The input's number and, for joinable batches, its id.
    /// - Returns: The rows, each ending in a newline.
    public func csvRows(label: InputLabel) -> String {
        var text = ""
        let input = label.number ?? 0
        func row(_ fields: [String?]) {
            var fields = fields
            if label.hasID { fields.insert(label.id, at: 1) }
            text += fields.map { CSV.field($0 ?? "") }.joined(separator: ",")
            text += "\n"
        }
        switch self {
        case .rejected(let error):
            row([String(input), "rejected", error.code.rawValue] + Array(repeating: nil, count: Self.csvHeader.count - 3))
        case .verified(let record):
            let common: [String?] = [String(input), "verified", nil, record.kind.rawValue, record.environment]
            guard !record.transactions.isEmpty else {
                row(common + [record.app?.bundleId] + Array(repeating: nil, count: Self.csvHeader.count - 6))
                return text
            }
            for transaction in record.transactions {
                row(common + [
                    transaction.bundleId, transaction.productId, transaction.transactionId,
                    transaction.originalTransactionId, transaction.purchaseDate?.iso8601,
                    transaction.expiresDate?.iso8601, transaction.revocationDate?.iso8601,
                    transaction.price.map { String($0.milliunits) }, transaction.price?.currency,
                ])
            }
        }
        return text
    }
}

/// RFC 4180 quoting.
enum CSV {
    /// `value`, quoted when it holds a comma, a quote or a line break (quotes doubled). A value
    /// starting with `=`, `+`, `-` or `@` is prefixed with `'` so spreadsheets do not run it as a
    /// formula: these fields come from signed but untrusted-to-the-reader data.
    static func field(_ value: String) -> String {
        var value = value
        if let first = value.unicodeScalars.first, "=+-@".unicodeScalars.contains(first), Int(value) == nil {
            value = "'" + value
        }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        var quoted = "\""
        for character in value {
            quoted.append(character)
            if character == "\"" { quoted.append("\"") }
        }
        return quoted + "\""
    }
}
