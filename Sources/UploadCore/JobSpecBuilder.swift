import UploadWire

/// Turns `job.add` params into a JobSpec, or says exactly what is wrong with them.
public enum JobSpecBuilder {
    public static func build(_ params: AddParams) throws(RPCError) -> JobSpec {
        // Worded for people: uploadctl shows these as usage errors (exit 64).
        func invalid(_ message: String) -> RPCError { RPCError(code: RPCError.invalidParamsCode, message: message) }
        guard params.source.hasPrefix("/") else {
            throw invalid("source must be an absolute path (uploadctl makes relative paths absolute): \(params.source)")
        }
        guard !params.source.utf8.contains(0) else { throw invalid("source contains a NUL byte") }
        let destination: Destination
        do {
            destination = try Destination.parse(params.destination)
        } catch {
            throw invalid(error.description)
        }
        let uploadProtocol = params.protocol ?? .auto
        if let message = mismatch(uploadProtocol, destination) { throw invalid(message) }
        if SafeFileName.component(from: params.source) == nil && destination.explicitFileName == nil {
            throw invalid(
                "cannot use the name of \(params.source) on a server (it has control characters, or is . or ..); name the file in the destination, as --to .../NAME"
            )
        }
        var headers: [KeyValue] = []
        for text in params.headers ?? [] {
            guard let header = HeaderSyntax.parse(text) else {
                throw invalid("header '\(text)' must look like 'Name: value'")
            }
            if let refusal = HeaderSyntax.refusal(ofName: header.name) { throw invalid(refusal) }
            headers.append(header)
        }
        var fields: [KeyValue] = []
        for text in params.fields ?? [] {
            guard let field = FieldSyntax.parse(text) else {
                throw invalid("field '\(text)' must look like 'name=value'")
            }
            fields.append(field)
        }
        var chunkSize: Int64?
        if let text = params.chunkSize {
            do {
                chunkSize = try ChunkSize.parse(text)
            } catch {
                throw invalid("chunk_size: \(error.description)")
            }
        }
        let priority = params.priority ?? 0
        guard (-1000...1000).contains(priority) else { throw invalid("priority must be from -1000 to 1000") }
        if let umask = params.umask, !(0...0o777).contains(umask) {
            throw invalid("umask must be from 0 to 511 (0777 in octal)")
        }
        if let token = params.clientToken, token.isEmpty || token.utf8.count > 256 {
            throw invalid("client_token must be 1 to 256 bytes")
        }
        if let metadata = params.metadata { try Self.checkMetadata(metadata) }
        if let name = params.fileField, !FieldSyntax.isPartName(name) {
            throw invalid(
                "file_field must be 1 to 256 bytes of printable characters without quotes: '\(name.prefix(80))' is not")
        }
        // Kept as given, but with spaces and such encoded, so that what is stored is a valid URL.
        let destinationText =
            if case .http = destination { Destination.encodingSpecialCharacters(params.destination) } else {
                params.destination
            }
        var spec = JobSpec(
            source: params.source, destination: destinationText, uploadProtocol: uploadProtocol, headers: headers,
            fields: fields, user: params.user, chunkSize: chunkSize, priority: priority,
            snapshot: params.snapshot ?? .auto,
            clientToken: params.clientToken, metadata: params.metadata)
        spec.umask = params.umask.map { UInt32($0) }
        spec.fileField = params.fileField
        // The daemon checks that it has the step and that its options are good (`Preparer.validate`).
        if let image = params.image { spec.preparation = [PreparationRequest(step: "image", options: image)] }
        return spec
    }

    /// Metadata is kept with the job, journaled, and sent in every event: it stays small.
    public static let metadataLimits = (keys: 32, keyBytes: 64, valueBytes: 1024, totalBytes: 8192)

    static func checkMetadata(_ metadata: [String: String]) throws(RPCError) {
        let limits = metadataLimits
        guard metadata.count <= limits.keys else {
            throw RPCError.invalidParams("metadata has \(metadata.count) keys; at most \(limits.keys)")
        }
        var total = 0
        for (key, value) in metadata {
            guard (1...limits.keyBytes).contains(key.utf8.count) else {
                throw RPCError.invalidParams(
                    "metadata keys are 1 to \(limits.keyBytes) bytes; '\(key.prefix(80))' is not")
            }
            guard value.utf8.count <= limits.valueBytes else {
                throw RPCError.invalidParams("metadata['\(key)'] is over \(limits.valueBytes) bytes")
            }
            total += key.utf8.count + value.utf8.count
        }
        guard total <= limits.totalBytes else {
            throw RPCError.invalidParams("metadata is \(total) bytes in all; at most \(limits.totalBytes)")
        }
    }

    /// A protocol that cannot go to that kind of destination (by its `traits`).
    public static func mismatch(_ uploadProtocol: UploadProtocol, _ destination: Destination) -> String? {
        guard let kind = destination.kind, !uploadProtocol.traits.destinations.contains(kind) else { return nil }
        if let hint = uploadProtocol.traits.wrongDestination[kind] { return hint }
        return "protocol \(uploadProtocol.rawValue) cannot upload to this destination; leave --protocol at auto"
    }
}
