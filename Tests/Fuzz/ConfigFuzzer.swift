// libFuzzer entry point: the config parser must report bad files, never crash.
// Built by contrib/scripts/fuzz together with UploadCore's sources.

@_cdecl("LLVMFuzzerTestOneInput")
public func configFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let document = try? INIDocument(parsing: text) else { return 0 }
    for section in document.sections {
        for entry in section.entries {
            _ = HeaderSyntax.parse(entry.value)
            _ = FieldSyntax.parse(entry.value)
            _ = try? ByteSize.parse(entry.value)
        }
    }
    return 0
}
