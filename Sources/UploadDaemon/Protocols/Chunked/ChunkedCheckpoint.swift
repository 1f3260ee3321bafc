import UploadCore
import UploadWire

/// A block-protocol upload in progress: the server's token, the block size, and how many blocks
/// it acknowledged.
struct ChunkedCheckpoint: CheckpointPayload {
    static let kind = "chunked"
    var upToken: String
    var blockSize: Int64
    var blocksAcknowledged: Int64

    init(upToken: String, blockSize: Int64, blocksAcknowledged: Int64) {
        self.upToken = upToken
        self.blockSize = blockSize
        self.blocksAcknowledged = blocksAcknowledged
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        upToken = try reader.readString()
        blockSize = try reader.readInt64()
        blocksAcknowledged = try reader.readInt64()
    }

    func write(to writer: inout BinaryWriter) {
        writer.write(upToken)
        writer.write(blockSize)
        writer.write(blocksAcknowledged)
    }
}
