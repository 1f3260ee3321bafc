import Glibc

/// The file a client checked before it asked for an upload: its device and inode numbers, as its
/// `lstat` (or, for a symlink it follows on purpose, its `stat`) found them.
///
/// A path names a file only until someone renames another file, or a symlink, into its place. In
/// a folder another user can write to, that someone can be an attacker, who swaps a symlink to one
/// of the user's private files in between the client's check and the daemon's open. With the
/// identity in `job.add`, the daemon uploads the file at the path only when it is still the one
/// checked, and refuses it otherwise: the file uploaded is the file that was checked.
///
/// On the wire: `"source_identity": "DEVICE:INODE"`, both in decimal. A string, not two JSON
/// numbers: inode numbers use all 64 bits on some file systems (overlayfs sets the high ones),
/// and a JSON number holds 53 exactly.
public struct SourceIdentity: Hashable, Sendable, CustomStringConvertible {
    public var device: UInt64
    public var inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    public init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// `DEVICE:INODE`; nil for anything else.
    public init?(_ text: String) {
        let parts = text.utf8.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        guard parts.count == 2, let device = Self.decimal(parts[0]), let inode = Self.decimal(parts[1]) else {
            return nil
        }
        self.init(device: device, inode: inode)
    }

    public var description: String { "\(device):\(inode)" }

    /// The identity of the file at `path`: the symlink itself when `followingSymlink` is false (a
    /// symlink is then refused by the daemon, as it is no regular file), else what it points to.
    /// Nil when the path cannot be stat'ed: the daemon says why when it tries.
    public static func of(_ path: String, followingSymlink: Bool) -> SourceIdentity? {
        var info = stat()
        let status = followingSymlink ? stat(path, &info) : lstat(path, &info)
        return status == 0 ? SourceIdentity(info) : nil
    }

    /// Whether `info` (an `fstat` of what the daemon opened, or a `stat`) is this file.
    public func matches(_ info: stat) -> Bool {
        UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    private static func decimal(_ digits: Substring.UTF8View) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 20 else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }
}

extension SourceIdentity: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let identity = SourceIdentity(text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "expected DEVICE:INODE in decimal (the st_dev and st_ino of the file checked)"))
        }
        self = identity
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
