/// A missing or invalid configuration variable.
public struct ConfigurationError: Error, CustomStringConvertible {
    /// What is wrong, naming the variable.
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
