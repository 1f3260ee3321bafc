/// `job.add` of many files in one request: `sources` names the files, and every other param is
/// given once for all of them. One answer, `{"jobs": [...], "errors": [...]}`, comes once every
/// job of it is durable. `uploadctl add` of a folder sends a few hundred files a request: the
/// template is read once, not once per file, and the answer is one object, not one per file.
///
/// Each element of `sources` is a path, or `{"source", "source_identity", "destination"}`, where
/// `destination` (this file's own) may stand in for the request's.
public struct AddSource: Sendable, Equatable {
    public var source: String
    public var sourceIdentity: SourceIdentity?
    /// This file's destination; nil: the request's.
    public var destination: String?

    public init(source: String, sourceIdentity: SourceIdentity? = nil, destination: String? = nil) {
        self.source = source
        self.sourceIdentity = sourceIdentity
        self.destination = destination
    }

    /// Its JSON: the bare path when that says it all.
    public var json: JSONValue {
        guard sourceIdentity != nil || destination != nil else { return .string(source) }
        var object: [String: JSONValue] = ["source": .string(source)]
        if let sourceIdentity { object["source_identity"] = .string(sourceIdentity.description) }
        if let destination { object["destination"] = .string(destination) }
        return .object(object)
    }
}

extension AddSource {
    /// The most bytes of `sources` a client puts in one request: half a request line's limit
    /// (`ControlProtocol.maxLineLength`), the rest is room for the shared params.
    public static let bytesPerRequest = ControlProtocol.maxLineLength / 2

    /// `files` cut into runs, each of which fits one request: at most `AddParams.maxSources`
    /// files, and at most `bytesPerRequest` of their JSON (4,096-byte paths would put 1 MiB in
    /// 256 files).
    public static func requests(_ files: [AddSource]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var start = 0
        var bytes = 0
        for (index, file) in files.enumerated() {
            let size = file.jsonSize
            if index > start, index - start == AddParams.maxSources || bytes + size > bytesPerRequest {
                runs.append(start..<index)
                start = index
                bytes = 0
            }
            bytes += size
        }
        if start < files.count { runs.append(start..<files.count) }
        return runs
    }

    /// At least the bytes of its JSON: every byte that JSON escapes counted as six (`\u00XX`).
    var jsonSize: Int {
        func escaped(_ text: String) -> Int {
            text.utf8.reduce(0) { sum, byte in sum + (byte < 0x20 || byte == 0x22 || byte == 0x5C ? 6 : 1) }
        }
        return escaped(source) + (destination.map(escaped) ?? 0) + 96
    }
}

extension AddParams {
    /// The most files one `job.add` names in `sources`.
    public static let maxSources = 10_000

    /// Params that name one file each, from a `job.add` that names `sources`; nil when the params
    /// have no `sources` (one file). The request's other keys are checked as a one-file add checks
    /// them; `new_batch` starts one batch for all of its files.
    public static func readSources(from params: JSONValue?) throws(RPCError) -> (
        template: AddParams, files: [AddParams]
    )? {
        guard case .object(var object)? = params, let listed = object.removeValue(forKey: "sources") else {
            return nil
        }
        for key in ["source", "source_identity"] where object[key] != nil {
            throw RPCError.invalidParams("give the files in either 'sources' or 'source', not both ('\(key)')")
        }
        if object["client_token"].map({ $0 != .null }) == true {
            throw RPCError.invalidParams(
                "a client_token names one job: add that file alone, with 'source', to give it one")
        }
        let sharedDestination = object["destination"].map { $0 != .null } == true
        if !sharedDestination { object["destination"] = .string("") }
        object["source"] = .string("")
        let template = try read(from: .object(object))
        guard case .array(let elements) = listed else {
            throw RPCError.invalidParams("'sources' must be an array of paths, or of {\"source\": PATH, ...}")
        }
        guard !elements.isEmpty else { throw RPCError.invalidParams("'sources' is empty: name at least one file") }
        guard elements.count <= maxSources else {
            throw RPCError.invalidParams(
                "'sources' names \(elements.count) files, at most \(maxSources) a request: send the rest in another")
        }
        var files: [AddParams] = []
        files.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            let file = try AddSource(sourcesElement: element, at: index)
            guard let destination = file.destination ?? (sharedDestination ? template.destination : nil) else {
                throw RPCError.invalidParams(
                    "sources[\(index)] has no destination: give 'destination' for all files, or one in each")
            }
            var params = template
            params.source = file.source
            params.sourceIdentity = file.sourceIdentity
            params.destination = destination
            files.append(params)
        }
        return (template, files)
    }
}

extension AddSource {
    /// One element of `sources`, the `index`th.
    init(sourcesElement element: JSONValue, at index: Int) throws(RPCError) {
        switch element {
        case .string(let path):
            self.init(source: path)
        case .object(let object):
            guard case .string(let path)? = object["source"] else {
                throw RPCError.invalidParams("sources[\(index)] needs 'source', the file's path, as a string")
            }
            self.init(source: path)
            for (key, value) in object where key != "source" {
                switch (key, value) {
                case (_, .null): continue
                case ("source_identity", .string(let text)):
                    guard let identity = SourceIdentity(text) else {
                        throw RPCError.invalidParams(
                            "sources[\(index)].source_identity must be \"DEVICE:INODE\", as stat(2) gives them")
                    }
                    sourceIdentity = identity
                case ("destination", .string(let text)):
                    destination = text
                case ("source_identity", _), ("destination", _):
                    throw RPCError.invalidParams("sources[\(index)].\(key) must be a string")
                default:
                    throw RPCError.invalidParams("sources[\(index)]: \(RPCError.unknownKeyText(key))")
                }
            }
        default:
            throw RPCError.invalidParams("sources[\(index)] must be a path, or {\"source\": PATH, ...}")
        }
    }
}
