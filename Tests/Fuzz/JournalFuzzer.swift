// libFuzzer entry point: the journal record decoder must never crash on any file content.
// Built by contrib/scripts/fuzz together with UploadCore's sources.

import UploadWire

@_cdecl("LLVMFuzzerTestOneInput")
public func journalFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // With and without a valid header in front, so the fuzzer reaches the record framing at once
    // (not in front of a header: replay would only skip it as damage, in a second whole pass).
    let candidates = bytes.starts(with: JournalFormat.magic) ? [bytes] : [bytes, JournalFormat.header() + bytes]
    for candidate in candidates {
        guard let contents = try? JournalFormat.decode(candidate) else { continue }
        precondition(contents.validLength <= candidate.count, "valid length past the end")
        var state = JournalState()
        for record in contents.records { state.apply(record) }
        // Whatever decoded must encode and decode to the same records.
        let again = try? JournalFormat.decode(JournalFormat.header() + JournalFormat.encode(contents.records))
        precondition(again?.records == contents.records, "records do not survive a round trip")
    }
    return 0
}
