import UploadCore
import UploadWire

/// Where a tus upload lives on the server, journaled as soon as the server creates it.
struct TusCheckpoint: CheckpointPayload {
    static let kind = "tus"
    var uploadURL: String
    /// The server's `Upload-Expires`, as it wrote it.
    var expires: String?

    init(uploadURL: String, expires: String?) {
        self.uploadURL = uploadURL
        self.expires = expires
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        uploadURL = try reader.readString()
        expires = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
    }

    func write(to writer: inout BinaryWriter) {
        writer.write(uploadURL)
        writer.write(expires) { $0.write($1) }
    }
}
