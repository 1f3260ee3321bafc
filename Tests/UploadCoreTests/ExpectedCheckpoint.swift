import TestSupport
import UploadCore
import UploadWire

extension Checkpoint {
    /// What a golden file's expected.json says a job's checkpoint is.
    init?(expected: [String: Any]?) {
        guard let expected, let kind = expected["kind"] as? String else { return nil }
        switch kind {
        case "tus":
            self = .tus(
                uploadURL: expected["upload_url"] as? String ?? "?", expires: expected["expires"] as? String)
        case "s3":
            self = .s3(
                uploadID: expected["upload_id"] as? String ?? "?", key: expected["key"] as? String ?? "?",
                partSize: Int64(expected["part_size"] as? Int ?? -1))
        case "chunked":
            self = .chunked(
                upToken: expected["up_token"] as? String ?? "?",
                blockSize: Int64(expected["block_size"] as? Int ?? -1),
                blocksAcknowledged: Int64(expected["blocks_acknowledged"] as? Int ?? -1))
        default:
            return nil
        }
    }
}
