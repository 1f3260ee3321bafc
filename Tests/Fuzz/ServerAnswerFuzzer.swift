// libFuzzer entry point: what a hostile server answers (tus headers, S3 XML, JSON with the file's
// URL) must be read without crashing, and every number that comes out must be in range.
// Built by contrib/scripts/fuzz together with Sources/UploadDaemon/ServerAnswers.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func serverAnswerFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)

    // tus: Upload-Offset against a few file sizes.
    for total: Int64 in [0, 1, 1 << 20, .max] {
        if let offset = TusHeaders.offset(text, total: total) {
            precondition(offset >= 0 && offset <= total, "offset \(offset) outside 0...\(total)")
        }
    }
    if let maxSize = TusHeaders.maxSize(text) { precondition(maxSize > 0) }

    // S3: ListParts pages and error documents.
    let page = S3Answer.partsPage(in: text)
    for part in page.parts {
        precondition((1...Int(S3PartSizing.maximumParts)).contains(part.number), "part number \(part.number)")
    }
    _ = S3Answer.error(in: text)
    _ = S3XML.values("UploadId", in: text)
    _ = S3Answer.summary(text)

    // JSON answers: the uploaded file's URL, with and without a pointer.
    _ = ResultURL.find(body: bytes, location: text.isEmpty ? nil : text, pointer: nil)
    _ = ResultURL.find(body: bytes, location: nil, pointer: "/data/url")
    if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) {
        let pointer = String(decoding: bytes[..<newline], as: UTF8.self)
        _ = ResultURL.find(body: Array(bytes[(newline + 1)...]), location: nil, pointer: pointer)
    }
    return 0
}
