/// Lets the jobs the journal's decoder reads share their strings with the job read before them:
/// the jobs of one add have one destination and the same options (`AddOptions`), their history
/// begins with the same line, and an original's snapshot path is its source. Each job read from the journal otherwise holds a copy
/// of its own, and a queue of 100,000 jobs from a few adds holds 100,000 of each.
///
/// Sharing changes no value. Each decoding worker has its own sharer, so a job is changed while
/// it is still the only reference to its fields, on the thread that made its strings.
struct StringSharer {
    private var destination = ""
    private var firstEvent = ""
    private var options = AddOptionsSharer()

    mutating func share(_ job: inout Job) {
        if let shared = Self.share(job.spec.destination, keptIn: &destination) { job.spec.destination = shared }
        options.share(&job.spec)
        if job.snapshot?.path == job.spec.source, !job.snapshot!.path.sharesStorage(with: job.spec.source) {
            job.snapshot!.path = job.spec.source
        }
        if let first = job.firstEventMessage, let shared = Self.share(first, keptIn: &firstEvent) {
            job.firstEventMessage = shared
        }
    }

    /// The kept string when `text` equals it but is stored apart (assigning it shares the storage);
    /// nil when `text` is the one to keep (a different string, now kept) or already shared.
    private static func share(_ text: String, keptIn kept: inout String) -> String? {
        if kept == text { return text.sharesStorage(with: kept) ? nil : kept }
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
