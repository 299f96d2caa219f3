import FuzzSupport

/// The payload JSON models: arbitrary bytes as the payload of a token whose header (and chain)
/// is genuine, so every input reaches jansson, kind detection and model decoding. (The signature
/// does not cover the new payload, so nothing but a decoding error or `invalid_signature` may
/// come out.)
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPayload(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let payload = Array(UnsafeBufferPointer(start: data, count: size))
    let (header, signature) = FuzzSupport.tokenParts
    let token = header + "." + FuzzSupport.base64URL(payload) + "." + signature
    FuzzSupport.checkInvariants(Array(token.utf8))
    return 0
}

@_cdecl("fuzz_payload_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    FuzzSupport.runFuzzer(argc: argc, argv: argv) { data, size in fuzzPayload(data, size) }
}
