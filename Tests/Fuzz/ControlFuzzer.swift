// libFuzzer entry point: request lines from a hostile client must give errors, never crashes.
// Built by contrib/scripts/fuzz together with UploadCore's sources.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func controlFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var framer = LineFramer(maxLineLength: 4096)
    for output in framer.feed(bytes) {
        guard case .line(let line) = output else { continue }
        guard let value = try? JSONCoding.decoder.decode(JSONValue.self, from: Data(line)) else { continue }
        let requests: [JSONValue]
        if case .array(let items) = value { requests = items } else { requests = [value] }
        for request in requests {
            let params = request.objectValue?["params"] ?? request
            if let add = try? AddParams.decode(from: params) { _ = try? JobSpecBuilder.build(add) }
            _ = try? JobSelection.decode(from: params)
            _ = try? ListParams.decode(from: params)
            _ = try? SubscribeParams.decode(from: params)
            if let text = request.objectValue?["destination"], case .string(let destination) = text {
                _ = try? Destination.parse(destination)
            }
        }
    }
    return 0
}
