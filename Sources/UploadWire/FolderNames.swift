import Glibc

/// The names in a folder, for the walks of `uploadctl add DIR` and of watched folders.
public enum FolderNames {
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
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        rewinddir(stream)  // the copy shares the offset: leave it where it was
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
