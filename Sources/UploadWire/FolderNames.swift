import Glibc

/// The names in a folder, for the walks of `uploadctl add DIR` and of watched folders.
public enum FolderNames {
    /// The name of a `readdir` entry, read where it is. `entry.pointee.d_name` would copy the
    /// whole 256-byte array, and glibc's buffer holds each entry in `d_reclen` bytes only: the
    /// copy of the last entry read past the buffer's end (AddressSanitizer caught it).
    public static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
    }

    /// The names `readdir` gives for the open folder `fd` (without `.` and `..`), sorted by their
    /// bytes; nil when it cannot be read (errno says why). `fd` stays open, at its start.
    public static func sorted(_ fd: Int32) -> [String]? {
        let copy = dup(fd)  // fdopendir takes the descriptor it is given
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return nil
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = Self.name(of: entry)
            if name != "." && name != ".." { names.append(name) }
        }
        rewinddir(stream)  // the copy shares the offset: leave it where it was
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
