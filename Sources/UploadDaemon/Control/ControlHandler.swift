import Foundation
import UploadCore
import UploadWire

/// Decodes JSON-RPC requests, calls the scheduler, encodes the answers. Knows nothing of sockets.
struct ControlHandler: Sendable {
    /// The client a request came from, for subscriptions and the order of its adds.
    struct Client: Sendable {
        var id: ControlClientID
        var deliver: @Sendable ([UInt8]) -> Void
        /// The request's turn among its client's, taken as its line was read: its adds hand out
        /// their IDs after those of the requests read before it (`AddTurns`).
        var turn: AddTurn? = nil
    }

    /// A `job.add` of a batch, ready for the scheduler: its place in the batch, its id, its params,
    /// and the fields its answer gives.
    typealias AddCall = (index: Int, id: JSONValue, params: AddParams, fields: JobFields?)

    var scheduler: Scheduler
    var events: EventHub
    /// Re-reads the config; returns a message for the client when it failed.
    var reload: @Sendable () async throws -> [String]
    var status: @Sendable () async -> DaemonStatus
    /// `folder.list` (nil), `folder.pause` (true) or `folder.resume` (false) of the named folder:
    /// the daemon's, which holds the watcher.
    var folders: @Sendable (_ name: String?, _ pause: Bool?) async throws(RPCError) -> FolderList = { _, _ in
        FolderList(folders: [])
    }

    /// Answers one line: a request, a notification, or a batch. Nil when nothing is to be sent back.
    func handle(line: [UInt8], client: Client) async -> [UInt8]? {
        // However the request ends, the adds its client sent after it must not wait for it.
        defer { client.turn?.end() }
        if let plain = Self.plainAdds(in: line) {
            let answers = await answer(plain, from: client)
            return Self.batchLine(plain.indices.compactMap { answers[$0] })
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: line)
        } catch {
            return Self.answerLine(RPCResponse(id: .null, error: .parseError("not valid JSON (\(error))")))
        }
        switch value {
        case .array(let items):
            guard !items.isEmpty else {
                return Self.answerLine(RPCResponse(id: .null, error: .invalidRequest("empty batch")))
            }
            let addAnswers = await answer(Self.adds(in: items), from: client)
            // The rest, up to 64 at once: few enough that a batch of 10,000 does not hold 10,000
            // tasks and their answers at once.
            let answers = await withTaskGroup(of: (Int, [UInt8]?).self) { group in
                var answers = [[UInt8]?](repeating: nil, count: items.count)
                for (index, answer) in addAnswers { answers[index] = answer }
                var next = 0
                func startNext() {
                    while next < items.count && addAnswers[next] != nil { next += 1 }
                    guard next < items.count else { return }
                    let index = next
                    let item = items[index]
                    next += 1
                    group.addTask { (index, await handleOne(item, client: client)) }
                }
                for _ in 0..<min(64, items.count) { startNext() }
                while let (index, answer) = await group.next() {
                    answers[index] = answer
                    startNext()
                }
                return answers.compactMap { $0 }
            }
            return Self.batchLine(answers)
        default:
            guard var line = await handleOne(value, client: client) else { return nil }
            line.append(UInt8(ascii: "\n"))  // in place: the line has room for it (`RPCLine.result`)
            return line
        }
    }

    /// A batch's answers as one line; nil when it has none (notifications only).
    private static func batchLine(_ answers: [[UInt8]]) -> [UInt8]? {
        guard !answers.isEmpty else { return nil }
        // One answer at a time into the array's bytes: no second copy of the whole batch.
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, answer) in answers.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += answer
        }
        bytes += [UInt8(ascii: "]"), UInt8(ascii: "\n")]
        return bytes
    }

    /// A batch's well-formed adds, given to the scheduler together: IDs and the queue follow the
    /// order given, and one journal write covers them all; after the adds the same client sent
    /// before (`AddTurns`). Their answers, by place in the batch.
    private func answer(_ adds: [AddCall], from client: Client) async -> [Int: [UInt8]] {
        guard !adds.isEmpty else {
            client.turn?.end()
            return [:]
        }
        var answers: [Int: [UInt8]] = [:]
        answers.reserveCapacity(adds.count)
        let outcomes = await scheduler.add(adds.map(\.params), turn: client.turn)
        for (add, outcome) in zip(adds, outcomes) {
            switch outcome {
            case .success(let job):
                answers[add.index] =
                    (try? RPCLine.result(id: add.id, encodedResult: job.jsonBytes(only: add.fields)))
                    ?? Self.line(
                        RPCResponse(
                            id: add.id,
                            error: RPCError(code: RPCError.internalErrorCode, message: "cannot encode the answer")))
            case .failure(let error):
                answers[add.index] = Self.line(RPCResponse(id: add.id, error: error))
            }
        }
        return answers
    }

    /// A line that is a batch of plain adds only (what `uploadctl add` sends), read without
    /// building its JSON values (`PlainAddBatch`); nil for any other line.
    private static func plainAdds(in line: [UInt8]) -> [AddCall]? {
        guard line.first == UInt8(ascii: "["), let batch = PlainAddBatch.read(line) else { return nil }
        var adds: [AddCall] = []
        adds.reserveCapacity(batch.count)
        for (index, request) in batch.enumerated() {
            let fields: JobFields?
            do {
                fields = try jobFields(request.params.jobFields)
            } catch {
                return nil  // a `job_fields` that names no field: the general reading answers why
            }
            adds.append((index, request.id, request.params, fields))
        }
        return adds
    }

    /// The requests of a batch that are well-formed `job.add` calls with an id, and their params.
    private static func adds(in items: [JSONValue]) -> [AddCall] {
        var adds: [AddCall] = []
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item, object["jsonrpc"] == .string("2.0"),
                object["method"] == .string(ControlMethod.add.rawValue), let id = object["id"]
            else { continue }
            switch id {
            case .string, .number: break
            default: continue
            }
            guard let params = try? AddParams.read(from: object["params"]) else { continue }
            let fields: JobFields?
            do { fields = try jobFields(params.jobFields) } catch { continue }
            adds.append((index, id, params, fields))
        }
        return adds
    }

    /// A client connected: it may subscribe until it closes.
    func connectionOpened(_ id: ControlClientID) {
        events.connect(id)
    }

    /// A client closed: its subscription ends, and one of its requests still running cannot make
    /// another.
    func connectionClosed(_ id: ControlClientID) {
        events.disconnect(id)
    }

    /// One request's answer as a line without its newline; nil for a notification.
    private func handleOne(_ value: JSONValue, client: Client) async -> [UInt8]? {
        guard case .object(let object) = value else {
            return Self.line(RPCResponse(id: .null, error: .invalidRequest("a request must be a JSON object")))
        }
        let id = object["id"]
        switch id {
        case nil, .null, .string, .number: break
        default:
            return Self.line(RPCResponse(id: .null, error: .invalidRequest("id must be a string, a number or null")))
        }
        guard object["jsonrpc"] == .string("2.0") else {
            return Self.line(RPCResponse(id: id ?? .null, error: .invalidRequest("\"jsonrpc\" must be \"2.0\"")))
        }
        guard case .string(let methodName)? = object["method"] else {
            return Self.line(RPCResponse(id: id ?? .null, error: .invalidRequest("\"method\" must be a string")))
        }
        var encoded: [UInt8]
        do {
            encoded = try await call(methodName, params: object["params"], client: client)
        } catch {
            guard let id else { return nil }
            return Self.line(RPCResponse(id: id, error: error))
        }
        guard let id else { return nil }  // a notification: no answer, even for errors
        // Handed over, the only reference: a big result becomes its line in place.
        guard let line = try? RPCLine.result(id: id, encodedResult: consume encoded) else {
            return Self.line(
                RPCResponse(
                    id: id, error: RPCError(code: RPCError.internalErrorCode, message: "cannot encode the answer")))
        }
        return line
    }

    /// Runs one method; its result comes back already encoded.
    private func call(_ name: String, params: JSONValue?, client: Client) async throws(RPCError) -> [UInt8] {
        guard let method = ControlMethod(rawValue: name) else { throw RPCError.methodNotFound(name) }
        // A request that adds nothing must not hold back the adds read after it while it runs.
        if method != .add { client.turn?.end() }
        switch method {
        case .hello:
            _ = try NoParams.decode(from: params)
            return try encodeResult(
                HelloInfo(
                    name: "uploadd", version: UploaddVersion.string, protocolVersion: ControlProtocol.version,
                    methods: ControlMethod.allCases.map(\.rawValue),
                    protocols: TransferRegistry.supportedProtocols.map(\.rawValue), pid: getpid(),
                    capabilities: HelloInfo.Capability.allCases.map(\.rawValue),
                    preparationSteps: PreparationRegistry.steps.keys.sorted()))
        case .status:
            _ = try NoParams.decode(from: params)
            return try encodeResult(await status())
        case .limit:
            let rate = try LimitParams.decode(from: params).bytesPerSecond()
            return try encodeResult(LimitResult(bandwidthLimit: try await scheduler.setBandwidthLimit(rate)))
        case .reload:
            _ = try NoParams.decode(from: params)
            do {
                return try encodeResult(ReloadResult(warnings: try await reload()))
            } catch let error as RPCError {
                throw error
            } catch {
                throw RPCError(
                    code: RPCError.configErrorCode,
                    message: "config not reloaded (the one in use stays):\n\(error)")
            }
        case .remotes:
            _ = try NoParams.decode(from: params)
            return try encodeResult(RemoteList(remotes: await scheduler.remotes()))
        case .testRemote:
            let remote = try RemoteParams.decode(from: params)
            return try encodeResult(try await scheduler.testRemote(named: remote.name))
        case .folders:
            _ = try NoParams.decode(from: params)
            return try encodeResult(try await folders(nil, nil))
        case .pauseFolder, .resumeFolder:
            let folder = try FolderParams.decode(from: params)
            let list = try await folders(folder.name, method == .pauseFolder)
            guard let info = list.folders.first(where: { $0.name == folder.name }) else {
                throw RPCError.invalidParams("no [folder \(folder.name)] in the config")
            }
            return try encodeResult(info)
        case .add:
            if let many = try AddParams.readSources(from: params) {
                let fields = try Self.jobFields(many.template.jobFields)
                let outcomes = await scheduler.add(many.files, turn: client.turn, startsOneBatch: true)
                return Self.addedList(outcomes, of: many.files, only: fields)
            }
            let add = try AddParams.read(from: params)
            let fields = try Self.jobFields(add.jobFields)
            return try await scheduler.add(add, turn: client.turn).jsonBytes(only: fields)
        case .get:
            let selection = try JobSelection.decode(from: params)
            guard selection.all == nil, selection.batch == nil, selection.states == nil else {
                throw RPCError.invalidParams(
                    "job.get takes 'id' or 'ids' only; job.list picks jobs by 'batch' or 'states'")
            }
            guard !selection.namedIDs.isEmpty else {
                throw RPCError.invalidParams("name the jobs: {\"id\": N} or {\"ids\": [...]}")
            }
            if let id = selection.id, selection.ids == nil { return try encodeResult(try await scheduler.get(id)) }
            var jobs: [JobInfo] = []
            for id in selection.namedIDs { jobs.append(try await scheduler.get(id)) }
            return try encodeResult(JobList(jobs: jobs))
        case .list:
            let list = try ListParams.decode(from: params).checked()
            let fields = try Self.jobFields(list.jobFields)
            guard let limit = list.limit else {
                return await scheduler.listJSON(
                    states: list.states, ids: list.ids, batch: list.batch, after: list.after, only: fields)
            }
            return await scheduler.listPageJSON(
                states: list.states, batch: list.batch, after: list.after, limit: min(limit, ListParams.maxLimit),
                only: fields)
        case .pause, .resume, .cancel, .remove, .retry:
            let command = JobCommand(rawValue: String(name.dropFirst("job.".count)))!
            let selection = try JobSelection.decode(from: params)
            if selection.isSingle {
                return try encodeResult(try await scheduler.perform(command, selection: selection)[0])
            }
            let outcome = try await scheduler.performEach(command, selection: selection)
            return try encodeResult(JobList(jobs: outcome.jobs, errors: outcome.errors))
        case .priority:
            let change = try PriorityParams.decode(from: params)
            return try encodeResult(try await scheduler.setPriority(change.id, to: change.priority))
        case .move:
            let move = try MoveParams.decode(from: params)
            return try encodeResult(try await scheduler.move(move))
        case .clear:
            let fields = try Self.jobFields(ClearParams.decode(from: params).jobFields)
            return JobList(jobs: try await scheduler.clear()).jsonBytes(only: fields)
        case .delete:
            let selection = try JobSelection.decode(from: params)
            try Self.checkDeleteSelection(selection)
            if selection.isSingle { return try encodeResult(try await scheduler.delete(selection.namedIDs)[0]) }
            let ids: [JobID]
            if let batch = selection.batch {
                ids = await scheduler.list(states: nil, ids: nil, batch: batch).map(\.id)
                // A batch whose jobs are all gone: nothing to delete, which is not a mistake.
                if ids.isEmpty { return try encodeResult(JobList(jobs: [], errors: [])) }
            } else {
                ids = selection.namedIDs
            }
            let outcome = try await scheduler.deleteEach(ids)
            return try encodeResult(JobList(jobs: outcome.jobs, errors: outcome.errors))
        case .subscribe:
            let subscribe = try SubscribeParams.decode(from: params)
            if let kinds = subscribe.kinds, kinds.contains(.overflow) {
                throw RPCError.invalidParams(
                    "kinds are job.state, job.progress and job.removed; events.overflow always comes")
            }
            let jobFields = try Self.jobFields(subscribe.jobFields)
            // False when the client closed while this request ran: a subscription must not
            // outlive its client, and a snapshot would go nowhere.
            let subscribed = events.subscribe(
                client.id,
                EventHub.Subscriber(
                    ids: subscribe.ids.map(Set.init), batch: subscribe.batch, kinds: subscribe.kinds.map(Set.init),
                    states: subscribe.states.map(Set.init), jobFields: jobFields, deliver: client.deliver))
            guard subscribed, subscribe.snapshot == true else { return Self.emptyObject }
            // After the subscription: a change in between is both in the snapshot or after it, and
            // in an event; revisions tell which is newer.
            return JobList(jobs: await scheduler.list(states: nil, ids: subscribe.ids, batch: subscribe.batch))
                .jsonBytes(only: jobFields)
        }
    }

    private static let emptyObject = Array("{}".utf8)

    /// The answer to a `job.add` of `sources`: the jobs added, in order, and for each file that
    /// was not, its place, its path and why.
    private static func addedList(
        _ outcomes: [Result<JobInfo, RPCError>], of files: [AddParams], only fields: JobFields?
    ) -> [UInt8] {
        var jobs: [JobInfo] = []
        jobs.reserveCapacity(outcomes.count)
        var errors: [JobFailure] = []
        for (index, outcome) in outcomes.enumerated() {
            switch outcome {
            case .success(let job): jobs.append(job)
            case .failure(let error): errors.append(JobFailure(source: files[index].source, index: index, error: error))
            }
        }
        return JobList(jobs: jobs, errors: errors).jsonBytes(only: fields)
    }

    /// `job.delete` takes `id`, `ids` or `batch`, one way only. It removes files from servers, so
    /// what it cannot honour is refused, never ignored: a `states` ignored with `batch` deleted the
    /// completed uploads of the whole batch.
    private static func checkDeleteSelection(_ selection: JobSelection) throws(RPCError) {
        if selection.all != nil {
            throw RPCError.invalidParams(
                "job.delete takes 'id', 'ids' or 'batch', not 'all': name the jobs, or their batch")
        }
        if selection.states != nil {
            throw RPCError.invalidParams(
                "job.delete does not narrow by 'states': find the jobs with job.list {\"batch\": B, \"states\": [...]}, "
                    + "then delete them with {\"ids\": [...]}")
        }
        if selection.batch != nil && !selection.namedIDs.isEmpty {
            throw RPCError.invalidParams("job.delete takes job IDs or 'batch', not both")
        }
    }

    /// `job_fields`, `id` and `state` always in them; a name no job has is refused.
    static func jobFields(_ names: [String]?) throws(RPCError) -> JobFields? {
        guard let names else { return nil }
        guard let fields = JobFields(names: names + ["id", "state"]) else {
            let unknown = names.first { !JobFields.names.contains($0) } ?? ""
            throw RPCError.invalidParams(
                "job_fields: a job has no field '\(unknown)'; its fields are \(JobFields.names.joined(separator: ", "))"
            )
        }
        return fields
    }
    private static let newline = [UInt8(ascii: "\n")]

    /// Jobs, the most frequent answers, are written by hand (`JobInfo.jsonBytes`).
    private func encodeResult(_ job: JobInfo) throws(RPCError) -> [UInt8] { job.jsonBytes }
    private func encodeResult(_ list: JobList) throws(RPCError) -> [UInt8] { list.jsonBytes }

    private func encodeResult<T: Encodable>(_ value: T) throws(RPCError) -> [UInt8] {
        do {
            return [UInt8](try JSONCoding.encoder.encode(value))
        } catch {
            throw RPCError(code: RPCError.internalErrorCode, message: "cannot encode the answer: \(error)")
        }
    }

    /// An answer as a whole line, newline included: what goes on the wire for a lone answer.
    static func answerLine(_ response: RPCResponse) -> [UInt8] { line(response) + newline }

    /// An answer as a line without its newline (a batch's element).
    static func line(_ response: RPCResponse) -> [UInt8] {
        (try? JSONCoding.encoder.encode(response)).map { [UInt8]($0) }
            ?? Array(#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#.utf8)
    }
}
