/// Turns `job.add` params into a JobSpec, or says exactly what is wrong with them.
public enum JobSpecBuilder {
    public static func build(_ params: AddParams) throws(RPCError) -> JobSpec {
        func invalid(_ message: String) -> RPCError { RPCError.invalidParams(message) }
        guard params.source.hasPrefix("/") else {
            throw invalid("source must be an absolute path (uploadctl makes relative paths absolute): \(params.source)")
        }
        guard !params.source.contains("\0") else { throw invalid("source contains a NUL byte") }
        let destination: Destination
        do {
            destination = try Destination.parse(params.destination)
        } catch {
            throw invalid(error.description)
        }
        let uploadProtocol = params.protocol ?? .auto
        if let message = mismatch(uploadProtocol, destination) { throw invalid(message) }
        var headers: [KeyValue] = []
        for text in params.headers ?? [] {
            guard let header = HeaderSyntax.parse(text) else { throw invalid("header '\(text)' must look like 'Name: value'") }
            headers.append(header)
        }
        var fields: [KeyValue] = []
        for text in params.fields ?? [] {
            guard let field = FieldSyntax.parse(text) else { throw invalid("field '\(text)' must look like 'name=value'") }
            fields.append(field)
        }
        var chunkSize: Int64?
        if let text = params.chunkSize {
            do {
                chunkSize = try ByteSize.parse(text)
            } catch {
                throw invalid("chunk_size: \(error.description)")
            }
            guard chunkSize! >= 1 else { throw invalid("chunk_size must be at least 1 byte") }
        }
        let priority = params.priority ?? 0
        guard (-1000...1000).contains(priority) else { throw invalid("priority must be from -1000 to 1000") }
        if params.image != nil {
            throw invalid("image preparation (--image) is not available in this uploadd yet; add the file without it")
        }
        return JobSpec(
            source: params.source, destination: params.destination, uploadProtocol: uploadProtocol, headers: headers,
            fields: fields, user: params.user, chunkSize: chunkSize, priority: priority, snapshot: params.snapshot ?? .auto,
            image: nil, clientToken: params.clientToken, metadata: params.metadata)
    }

    /// A protocol that cannot go to that kind of destination.
    static func mismatch(_ uploadProtocol: UploadProtocol, _ destination: Destination) -> String? {
        switch (uploadProtocol, destination) {
        case (_, .remote), (.auto, _): return nil
        case (.s3, .s3), (.file, .file): return nil
        case (.put, .http), (.post, .http), (.tus, .http), (.chunked, .http), (.s3, .http): return nil
        default:
            return "protocol \(uploadProtocol.rawValue) cannot upload to this destination; leave --protocol at auto"
        }
    }
}
