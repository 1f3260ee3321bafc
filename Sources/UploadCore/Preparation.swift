import UploadWire

/// One preparation step a job asks for: the step's name (`image`) and its options as the user
/// wrote them (`max=2048,quality=75`). The step checks them when the job is added.
public struct PreparationRequest: Codable, Sendable, Equatable {
    public var step: String
    public var options: String

    public init(step: String, options: String) {
        self.step = step
        self.options = options
    }
}

/// What the preparation stage made of a job's source, journaled before any of it is sent: every
/// attempt, after any restart, sends exactly these bytes (tus and S3 resume depend on it).
public struct PreparedFile: Sendable, Equatable {
    /// The file in the daemon's cache.
    public var path: String
    public var size: Int64
    /// SHA-256 of the file, lowercase hex: checked before an attempt sends it.
    public var sha256: String
    /// The name on the server when a step changed it (`IMG_0001.HEIC` becomes `IMG_0001.jpg`).
    public var fileName: String?
    /// The MIME type when a step changed the format.
    public var contentType: String?
    /// What the steps report, for `show` (`original_size`, `width`, `height`, …), in order.
    public var details: [KeyValue]

    public init(
        path: String, size: Int64, sha256: String, fileName: String? = nil, contentType: String? = nil,
        details: [KeyValue] = []
    ) {
        self.path = path
        self.size = size
        self.sha256 = sha256
        self.fileName = fileName
        self.contentType = contentType
        self.details = details
    }
}

extension Job {
    /// Whether preparation still has to run before the job's next attempt.
    public var needsPreparation: Bool { !spec.preparation.isEmpty && prepared == nil }
}
