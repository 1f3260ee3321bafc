/// How a file is cut into parts: S3 allows at most 10,000 parts of 5 MiB to 5 GiB (the last part
/// may be smaller).
enum S3PartSizing {
    static let minimumPartSize: Int64 = 5 << 20
    static let maximumPartSize: Int64 = 5 << 30
    static let maximumParts: Int64 = 10_000
    static let defaultPartSize: Int64 = 8 << 20

    /// The requested size (default 8 MiB), at least 5 MiB, raised to whole MiB so that the file
    /// fits in 10,000 parts.
    static func partSize(fileSize: Int64, requested: Int64?) -> Int64 {
        var size = max(requested ?? defaultPartSize, minimumPartSize)
        if fileSize > size * maximumParts {
            let needed = (fileSize + maximumParts - 1) / maximumParts
            let mebibyte: Int64 = 1 << 20
            size = (needed + mebibyte - 1) / mebibyte * mebibyte
        }
        return min(size, maximumPartSize)
    }

    static func partCount(fileSize: Int64, partSize: Int64) -> Int {
        fileSize == 0 ? 1 : Int((fileSize + partSize - 1) / partSize)
    }

    /// Offset and length of part `number` (from 1).
    static func range(ofPart number: Int, fileSize: Int64, partSize: Int64) -> (offset: Int64, length: Int64) {
        let offset = Int64(number - 1) * partSize
        return (offset, max(0, min(partSize, fileSize - offset)))
    }
}
