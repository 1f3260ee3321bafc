/// `job.add` params read straight from their parsed JSON, without a `Decoder`: an add of 20,000
/// small files reads 20,000 of them, and the generic decoder (`StrictParams.decode`) was 3.6% of
/// the daemon's CPU for them, more than the parse itself.
///
/// Only the plain forms are read here; nil for anything else (an unknown key, a wrong type, an
/// unknown protocol), and the caller decodes those with `decode(from:)`, which says what is wrong.
/// What both read, they read alike (`AddParamsJSONTests` holds them to it).
extension AddParams {
    /// The params read fast when they are plain, else decoded with the decoder's errors.
    public static func read(from params: JSONValue?) throws(RPCError) -> AddParams {
        if let plain = AddParams(json: params) { return plain }
        return try decode(from: params)
    }

    public init?(json: JSONValue?) {
        guard case .object(let object)? = json, case .string(let source)? = object["source"],
            case .string(let destination)? = object["destination"]
        else { return nil }
        self.init(source: source, destination: destination)
        for (key, value) in object {
            guard Self.take(key, value, into: &self) else { return nil }
        }
    }

    /// Sets one key's value; false when the key is unknown or its value not in a plain form.
    package static func take(_ key: String, _ value: JSONValue, into params: inout AddParams) -> Bool {
        if case .null = value { return knownKeys.contains(key) && key != "source" && key != "destination" }
        switch key {
        case "source":
            guard let source = value.plainString else { return false }
            params.source = source
        case "source_identity":
            guard let text = value.plainString, let identity = SourceIdentity(text) else { return false }
            params.sourceIdentity = identity
        case "destination":
            guard let destination = value.plainString else { return false }
            params.destination = destination
        case "protocol":
            guard let name = value.plainString, let chosen = UploadProtocol(rawValue: name) else { return false }
            params.protocol = chosen
        case "headers":
            guard let headers = value.plainStrings else { return false }
            params.headers = headers
        case "fields":
            guard let fields = value.plainStrings ?? value.sortedPairs else { return false }
            params.fields = fields
        case "user":
            guard let user = value.plainString else { return false }
            params.user = user
        case "chunk_size":
            guard let size = value.wholeNumber(Int64.self).map(String.init) ?? value.plainString else { return false }
            params.chunkSize = size
        case "file_field":
            guard let name = value.plainString else { return false }
            params.fileField = name
        case "priority":
            guard let priority = value.wholeNumber(Int.self) else { return false }
            params.priority = priority
        case "snapshot":
            guard let name = value.plainString, let mode = SnapshotMode(rawValue: name) else { return false }
            params.snapshot = mode
        case "image":
            guard let image = value.plainString else { return false }
            params.image = image
        case "client_token":
            guard let token = value.plainString else { return false }
            params.clientToken = token
        case "metadata":
            guard let metadata = value.plainStringObject else { return false }
            params.metadata = metadata
        case "umask":
            guard let umask = value.wholeNumber(Int.self) else { return false }
            params.umask = umask
        case "batch":
            guard let batch = value.wholeNumber(UInt64.self) else { return false }
            params.batch = JobID(rawValue: batch)
        case "new_batch":
            guard case .bool(let flag) = value else { return false }
            params.newBatch = flag
        case "job_fields":
            guard let names = value.plainStrings else { return false }
            params.jobFields = names
        default: return false
        }
        return true
    }
}

extension JSONValue {
    fileprivate var plainString: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// An array of strings only.
    fileprivate var plainStrings: [String]? {
        guard case .array(let elements) = self else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let text) = element else { return nil }
            strings.append(text)
        }
        return strings
    }

    /// An object whose values are all strings.
    fileprivate var plainStringObject: [String: String]? {
        guard case .object(let object) = self else { return nil }
        var strings: [String: String] = [:]
        strings.reserveCapacity(object.count)
        for (key, value) in object {
            guard let text = value.plainString else { return nil }
            strings[key] = text
        }
        return strings
    }

    /// `{"k": "v", ...}` as `k=v` strings, sorted by key, as `AddParams.init(from:)` takes `fields`.
    fileprivate var sortedPairs: [String]? {
        plainStringObject.map { object in object.keys.sorted().map { "\($0)=\(object[$0]!)" } }
    }

    /// A number that `T` holds exactly, as the decoder takes integers.
    fileprivate func wholeNumber<T: FixedWidthInteger>(_: T.Type) -> T? {
        if case .number(let number) = self { return T(exactly: number) }
        return nil
    }
}
