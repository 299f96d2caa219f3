import FuzzSupport
import ReceiptKit

/// The legacy receipt parsers on arbitrary bytes: the DER/BER reader, the PKCS #7 envelope, the
/// attribute sets, the certificates and the chain.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceipt(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let first = Result { try FuzzSupport.verifier.verifyReceipt(bytes) }
    let second = Result { try FuzzSupport.uncachedVerifier.verifyReceipt(bytes) }
    switch (first, second) {
    case (.success(let a), .success(let b)):
        precondition(VerificationRecord(a).json() == VerificationRecord(b).json(), "receipt outcome depends on the cache")
    case (.failure(let a as ReceiptKitError), .failure(let b as ReceiptKitError)):
        precondition(a.code == b.code && a.reason == b.reason, "receipt error depends on the cache: \(a) / \(b)")
    default:
        preconditionFailure("receipt outcome depends on the cache, or a non-ReceiptKit error escaped")
    }
    return 0
}

@_cdecl("fuzz_receipt_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    FuzzSupport.runFuzzer(argc: argc, argv: argv) { data, size in fuzzReceipt(data, size) }
}
