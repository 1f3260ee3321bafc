import UploadCore
import UploadWire

/// An S3 multipart upload in progress: its UploadId, the key it was started for, and the part size
/// every part must keep.
struct S3Checkpoint: CheckpointPayload {
    static let kind = "s3"
    var uploadID: String
    var key: String
    var partSize: Int64

    init(uploadID: String, key: String, partSize: Int64) {
        self.uploadID = uploadID
        self.key = key
        self.partSize = partSize
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        uploadID = try reader.readString()
        key = try reader.readString()
        partSize = try reader.readInt64()
    }

    func write(to writer: inout BinaryWriter) {
        writer.write(uploadID)
        writer.write(key)
        writer.write(partSize)
    }
}
