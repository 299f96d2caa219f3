import FuzzSupport

/// The whole JWS path on arbitrary bytes: serialization, header, certificates, chain, payload,
/// signature, claims and output, with and without the caches.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    FuzzSupport.checkInvariants(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

@_cdecl("fuzz_jws_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    FuzzSupport.runFuzzer(argc: argc, argv: argv) { data, size in fuzzJWS(data, size) }
}
