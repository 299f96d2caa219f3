import FuzzSupport
import ReceiptKit

/// Input detection and forced kinds, as `verify-receipt` sees a line with or without `--kind`:
/// the first byte picks the kind (or none), the rest is the line — JSON bodies (`signedPayload`,
/// `receipt-data`), base64 receipts, JWS and anything else.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    guard size > 0 else { return 0 }
    let kinds: [PayloadKind?] = [nil] + PayloadKind.allCases.map(Optional.some)
    let kind = kinds[Int(data[0]) % kinds.count]
    let line = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let cached = FuzzSupport.verifier.verify(input: line, as: kind).json()
    let uncached = FuzzSupport.uncachedVerifier.verify(input: line, as: kind).json()
    precondition(cached == uncached, "outcome depends on the cache:\n\(cached)\n\(uncached)")
    return 0
}

@_cdecl("fuzz_input_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    FuzzSupport.runFuzzer(argc: argc, argv: argv) { data, size in fuzzInput(data, size) }
}
