/// What a verified chain ended in, printed with every accepted input.
public struct ChainSummary: Sendable, Hashable {
    /// SHA-256 of the anchor's DER (lowercase hex): the root the chain was validated to.
    public let rootSHA256: String
    /// SHA-256 of the signing certificate's DER (lowercase hex).
    public let leafSHA256: String
    /// The end of the signing certificate's validity.
    public let leafNotAfter: Timestamp?
}

/// A certificate chain that ReceiptKit validated: only ``JWSChainValidator`` and
/// ``ReceiptChainValidator`` make one.
struct ValidatedChain: Sendable {
    /// The leaf's public key, which must verify the signature.
    let leafKey: PublicKey
    let summary: ChainSummary
    /// The validated path, leaf first, anchor last: what revocation is checked on.
    let path: [Certificate]
    /// How reasons name each certificate of ``path``.
    let names: [String]
}
