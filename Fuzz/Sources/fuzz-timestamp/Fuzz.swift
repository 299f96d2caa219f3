import FuzzSupport
import ReceiptKit

/// The RFC 3339 parser behind receipt dates and `--at`: any instant it accepts must render and
/// parse back to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTimestamp(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let instant = Timestamp(rfc3339: text) {
        let rendered = instant.iso8601
        if !rendered.hasPrefix("+"), !rendered.hasPrefix("-") {
            precondition(Timestamp(rfc3339: rendered) == instant, "\(text) -> \(rendered) does not round-trip")
        }
    }
    return 0
}

@_cdecl("fuzz_timestamp_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    FuzzSupport.runFuzzer(argc: argc, argv: argv) { data, size in fuzzTimestamp(data, size) }
}
