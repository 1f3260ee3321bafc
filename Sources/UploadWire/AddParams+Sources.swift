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

    /// The file of a one-file add's `params`, in a request of `sources` whose destination is
    /// `destination`: its own only when it differs; its identity only when `withIdentity`.
    public init(_ params: AddParams, requestDestination destination: String, withIdentity: Bool = true) {
        self.init(
            source: params.source, sourceIdentity: withIdentity ? params.sourceIdentity : nil,
            destination: params.destination == destination ? nil : params.destination)
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
    /// `files` cut into runs, each of which fits one request beside shared params of `sharedBytes`
    /// (their JSON): at most `AddParams.maxSources` files, and the files' JSON within half a
    /// request line and within the line's room beside the shared params (4,096-byte paths put
    /// 1 MiB in 256 files), and the shared params times the files within
    /// `AddParams.maxSharedBytes`, which the daemon refuses past. Each run has one file at least.
    public static func requests(_ files: [AddSource], sharedBytes: Int) -> [Range<Int>] {
        let room = min(ControlProtocol.maxLineLength / 2, ControlProtocol.maxLineLength - sharedBytes - 4096)
        let most = min(AddParams.maxSources, max(1, AddParams.maxSharedBytes / max(sharedBytes, 1)))
        var runs: [Range<Int>] = []
        var start = 0
        var bytes = 0
        for (index, file) in files.enumerated() {
            let size = file.jsonSize
            if index > start, index - start == most || bytes + size > room {
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
    /// The most bytes of shared params (their JSON) times the files of one `job.add` of `sources`:
    /// each file is checked, answered and journaled with its own copy of them, and one line of
    /// 1 MiB must not become gigabytes of jobs or of error messages.
    public static let maxSharedBytes = 16 << 20

    /// Params that name one file each, from a `job.add` that names `sources`; nil when the params
    /// have no `sources` (one file). The request's other keys are read as a one-file add reads
    /// them; `new_batch` starts one batch for all of its files. `null` is a key not given.
    public static func readSources(from params: JSONValue?) throws(RPCError) -> (
        template: AddParams, files: [AddParams]
    )? {
        guard case .object(var object)? = params, let listed = object.removeValue(forKey: "sources"),
            listed != .null
        else { return nil }
        for key in ["source", "source_identity"] where object[key].map({ $0 != .null }) == true {
            throw RPCError.invalidParams("give the files in either 'sources' or 'source', not both ('\(key)')")
        }
        if object["client_token"].map({ $0 != .null }) == true {
            throw RPCError.invalidParams(
                "a client_token names one job: add that file alone, with 'source', to give it one")
        }
        guard case .array(let elements) = listed else {
            throw RPCError.invalidParams("'sources' must be an array of paths, or of {\"source\": PATH, ...}")
        }
        guard !elements.isEmpty else { throw RPCError.invalidParams("'sources' is empty: name at least one file") }
        guard elements.count <= maxSources else {
            throw RPCError.invalidParams(
                "'sources' names \(elements.count) files, at most \(maxSources) a request: send the rest in another")
        }
        let sharedBytes = (try? JSONValue.object(object).jsonBytes().count) ?? 0
        guard sharedBytes * elements.count <= maxSharedBytes else {
            throw RPCError.invalidParams(
                "the params all \(elements.count) files share are \(sharedBytes) bytes, and each file gets a copy: "
                    + "send at most \(max(1, maxSharedBytes / max(sharedBytes, 1))) files a request")
        }
        let sharedDestination = object["destination"].map { $0 != .null } == true
        if !sharedDestination { object["destination"] = .string("") }
        object["source"] = .string("")
        object["source_identity"] = nil
        let template = try read(from: .object(object))
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
                case ("source_identity", .null), ("destination", .null): continue
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
