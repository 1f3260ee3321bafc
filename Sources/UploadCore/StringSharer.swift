/// Lets the jobs the journal's decoder reads share their strings with the job read before them:
/// the jobs of one add have one destination, source folder and the same options (`AddOptions`),
/// and their history begins with the same line. Each job read from the journal otherwise holds a
/// copy of its own, and a queue of 100,000 jobs from a few adds holds 100,000 of each.
///
/// Sharing changes no value. Each decoding worker has its own sharer, so a job is changed while
/// it is still the only reference to its fields, on the thread that made its strings.
struct StringSharer {
    private var firstEvent = ""
    private var options = AddOptionsSharer()

    mutating func share(_ job: inout Job) {
        options.share(&job.spec)
        if let first = job.firstEventMessage, let shared = Self.share(first, keptIn: &firstEvent) {
            job.firstEventMessage = shared
        }
    }

    /// The kept string when `text` equals it but is stored apart (assigning it shares the storage);
    /// nil when `text` is the one to keep (a different string, now kept) or already shared.
    private static func share(_ text: String, keptIn kept: inout String) -> String? {
        if kept.hasTheBytes(of: text) { return text.sharesStorage(with: kept) ? nil : kept }
        kept = text
        return nil
    }
}

extension String {
    /// Whether two equal strings are one buffer (or both small enough to live inline, where there
    /// is nothing to share).
    fileprivate func sharesStorage(with other: String) -> Bool {
        var mine = self
        var theirs = other
        return mine.withUTF8 { a in theirs.withUTF8 { b in a.baseAddress == b.baseAddress || a.count <= 15 } }
    }
}
