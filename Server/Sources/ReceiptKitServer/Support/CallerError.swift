/// An error about what was asked rather than a failure of the database: a feature's refusal
/// (``InvalidInput``, `AppleFailure`, `ConsumptionRefusal`, …), each with a stable snake_case
/// `code` and a `message` for a person. `HTTP/FeatureAnswers.swift` gives each its answer, in one
/// place; ``Store/run(_:)`` and the drivers pass it through unchanged, where any other failure of
/// an operation becomes a `StoreError`.
protocol CallerError: Error, Sendable, CustomStringConvertible {
    /// A stable snake_case code (`invalid_request`, `transaction_not_found`, …).
    var code: String { get }
    /// What went wrong, for a person: never SQL, a stack trace or a driver's text.
    var message: String { get }
}

extension CallerError {
    /// `code: message`, for a log or a command's output.
    var description: String { "\(code): \(message)" }
}

/// Something the caller gave that a feature cannot take, saying which and why (`invalid_request`).
struct InvalidInput: CallerError {
    let message: String

    init(_ message: String) {
        self.message = message
    }

    var code: String { "invalid_request" }
}
