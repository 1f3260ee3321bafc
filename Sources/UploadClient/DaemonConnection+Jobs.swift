import UploadWire

extension DaemonConnection {
    /// Every job `params` picks (`limit` and `after` aside), fetched a page at a time: a queue of a
    /// million jobs then never makes one answer of a hundred megabytes, which the daemon would
    /// build and this process parse whole. A daemon older than pages (`list.pages`) sends them all
    /// in one answer. Pages are not one snapshot: a job added meanwhile comes in a later page (IDs
    /// only grow), one removed meanwhile may be left out.
    public func listJobs(_ params: ListParams, pageSize: Int = ListParams.maxLimit) throws -> [JobInfo] {
        try listPages(params, pageSize: pageSize) { result in
            let list = try result.decode(JobList.self)
            return (list.jobs, list.next)
        }
    }

    /// The same as `{"jobs": [...]}`, each job as the daemon wrote it (for `--json`: members this
    /// client does not know stay). Pages of the shape uploadd writes are joined as they came;
    /// any other is parsed.
    public func listJobsJSON(_ params: ListParams, pageSize: Int = ListParams.maxLimit) throws -> [UInt8] {
        let pieces = try listPages(params, pageSize: pageSize) { result -> ([ArraySlice<UInt8>], JobID?) in
            let text = result.json
            if let page = JobPageText(text) { return ([page.jobs], page.next) }
            return try Self.parsedPage(result)
        }
        var joined = Array(#"{"jobs":["#.utf8)
        for piece in pieces where !piece.isEmpty {
            if joined.last != UInt8(ascii: "[") { joined.append(UInt8(ascii: ",")) }
            joined += piece
        }
        joined += Array("]}".utf8)
        return joined
    }

    /// The queue's order: each queued or paused job's `position`, asked for without the rest of
    /// each job. Empty from a daemon that gives no positions.
    public func queuePositions() throws -> [JobID: Int] {
        struct Page: Decodable {
            struct Job: Decodable { var id: JobID, position: Int? }
            var jobs: [Job]
            var next: JobID?
        }
        let params = ListParams(states: [.queued, .paused], jobFields: ["position"])
        let jobs = try listPages(params, pageSize: ListParams.maxLimit) { result in
            let page = try result.decode(Page.self)
            return (page.jobs, page.next)
        }
        return Dictionary(jobs.compactMap { job in job.position.map { (job.id, $0) } }, uniquingKeysWith: { $1 })
    }

    /// A page's jobs, each written again from its parsed value.
    private static func parsedPage(_ result: RPCResult) throws -> ([ArraySlice<UInt8>], JobID?) {
        let answer = try result.value().objectValue
        guard case .array(let jobs)? = answer?["jobs"] else {
            throw ControlClientError.unexpectedAnswer("job.list answered without a list of jobs")
        }
        let pieces = try jobs.map { ArraySlice(try $0.jsonBytes()) }
        guard let next = answer?["next"] else { return (pieces, nil) }
        guard case .number(let number) = next, number >= 1, number < 0x1p53, number == number.rounded() else {
            throw ControlClientError.unexpectedAnswer("job.list answered with a next page after \(next)")
        }
        return (pieces, JobID(UInt64(number)))
    }

    private func listPages<Item>(
        _ params: ListParams, pageSize: Int, read: (RPCResult) throws -> (items: [Item], next: JobID?)
    ) throws -> [Item] {
        var whole = params
        whole.limit = nil
        whole.after = nil
        // Named jobs come in the order named, in one answer.
        guard params.ids == nil else { return try read(call(.list, JSONValue(encoding: whole))).items }
        var page = whole
        page.limit = pageSize
        var items: [Item] = []
        while true {
            let result: RPCResult
            do {
                result = try call(.list, JSONValue(encoding: page))
            } catch let refusal as RPCError where page.after == nil && refusal.refusesUnknownKey("limit") {
                return try read(call(.list, JSONValue(encoding: whole))).items
            }
            let (pageItems, next) = try read(result)
            items += pageItems
            guard let next else { return items }
            guard page.after.map({ next > $0 }) ?? true else {
                throw ControlClientError.unexpectedAnswer("job.list answered with a next page that goes back")
            }
            page.after = next
        }
    }

    /// `job.clear`: the IDs of the jobs cleared, asked for without the rest of each job (a daemon
    /// older than `clear.job_fields` sends them whole).
    public func clearJobs() throws -> [JobID] {
        struct Cleared: Decodable {
            struct Job: Decodable { var id: JobID }
            var jobs: [Job]
        }
        let result: RPCResult
        do {
            result = try call(.clear, JSONValue(encoding: ClearParams(jobFields: [])))
        } catch let refusal as RPCError where refusal.refusesUnknownKey("job_fields") {
            result = try call(.clear)
        }
        return try result.decode(Cleared.self).jobs.map(\.id)
    }
}
