/// What preparation (`--image`) made of a job's source: `bytes_total` is `size` from then on.
public struct PreparedInfo: Codable, Sendable, Equatable {
    /// The bytes sent.
    public var size: Int64
    /// The source's size before preparation.
    public var originalSize: Int64
    /// SHA-256 of what is sent, lowercase hex: what the server must end up with.
    public var sha256: String
    /// The name on the server, when preparation changed it (`IMG_0001.HEIC` → `IMG_0001.jpg`).
    public var fileName: String?
    public var contentType: String?
    /// What the steps report: `width`, `height`, `original_width`, `original_height`, `format`,
    /// `quality`; `image` or `image_error` when the source went out as it was.
    public var details: [String: String]

    public init(
        size: Int64, originalSize: Int64, sha256: String, fileName: String?, contentType: String?,
        details: [String: String]
    ) {
        self.size = size
        self.originalSize = originalSize
        self.sha256 = sha256
        self.fileName = fileName
        self.contentType = contentType
        self.details = details
    }

    enum CodingKeys: String, CodingKey {
        case size, sha256, details
        case originalSize = "original_size"
        case fileName = "file_name"
        case contentType = "content_type"
    }
}
