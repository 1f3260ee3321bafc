import UploadCore
import UploadWire

/// The three checkpoint kinds uploadd has, built by hand in their frozen payload layout, for tests
/// that cannot see the daemon's TusCheckpoint, S3Checkpoint and ChunkedCheckpoint (which write the
/// same bytes: UploadDaemonTests' GoldenCheckpointTests check it).
extension Checkpoint {
    public static func tus(uploadURL: String, expires: String?) -> Checkpoint {
        var writer = BinaryWriter()
        writer.write(uploadURL)
        writer.write(expires) { $0.write($1) }
        return Checkpoint(kind: "tus", payload: writer.bytes)
    }

    public static func s3(uploadID: String, key: String, partSize: Int64) -> Checkpoint {
        var writer = BinaryWriter()
        writer.write(uploadID)
        writer.write(key)
        writer.write(partSize)
        return Checkpoint(kind: "s3", payload: writer.bytes)
    }

    public static func chunked(upToken: String, blockSize: Int64, blocksAcknowledged: Int64) -> Checkpoint {
        var writer = BinaryWriter()
        writer.write(upToken)
        writer.write(blockSize)
        writer.write(blocksAcknowledged)
        return Checkpoint(kind: "chunked", payload: writer.bytes)
    }
}
