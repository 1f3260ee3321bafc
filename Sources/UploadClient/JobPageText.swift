import UploadWire

/// A `job.list` page as the daemon wrote it, `{"jobs":[...]}` or `{"jobs":[...],"next":N}`, taken
/// apart without parsing its jobs: `uploadctl --json list` joins the pages' jobs as they came,
/// where parsing 10,000 jobs into values and writing them again took 300 ms a page.
///
/// Only that exact shape is taken (no spaces, `jobs` first, at most `next` after it); the jobs are
/// checked to close no bracket they did not open, outside strings, so that a page of any other
/// shape is refused here and parsed by the caller instead.
struct JobPageText {
    /// The bytes between the jobs array's brackets: the job objects and the commas between them.
    let jobs: ArraySlice<UInt8>
    let next: JobID?

    private static let opening = Array(#"{"jobs":["#.utf8)
    private static let nextKey = Array(#"],"next":"#.utf8)

    init?(_ text: [UInt8]) {
        guard text.count >= Self.opening.count + 2, text.starts(with: Self.opening), text.last == UInt8(ascii: "}")
        else { return nil }
        var end = text.count - 1  // the closing brace
        var next: UInt64?
        var digitsStart = end
        while digitsStart > 0, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[digitsStart - 1]) {
            digitsStart -= 1
        }
        if digitsStart < end {
            guard end - digitsStart <= 19, digitsStart >= Self.nextKey.count,
                text[(digitsStart - Self.nextKey.count)..<digitsStart].elementsEqual(Self.nextKey),
                let value = UInt64(String(decoding: text[digitsStart..<end], as: UTF8.self)), value > 0
            else { return nil }
            next = value
            end = digitsStart - Self.nextKey.count  // the jobs array's closing bracket
        } else {
            end -= 1
            guard text[end] == UInt8(ascii: "]") else { return nil }
        }
        guard end >= Self.opening.count else { return nil }
        let jobs = text[Self.opening.count..<end]
        guard Self.closesOnlyWhatItOpens(jobs) else { return nil }
        self.jobs = jobs
        self.next = next.map { JobID($0) }
    }

    /// Brackets and braces outside strings balance, and never close below where they started.
    private static func closesOnlyWhatItOpens(_ bytes: ArraySlice<UInt8>) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth < 0 { return false }
            default: break
            }
        }
        return depth == 0 && !inString
    }
}
