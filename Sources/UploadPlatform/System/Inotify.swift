import Glibc

/// An inotify(7) instance: watches on folders, and the events they report, read without blocking.
///
/// Not thread-safe: one thread owns it (the folder watcher's).
package final class Inotify {
    /// One event: the watch it came from, what happened, and the name inside the watched folder
    /// (empty for an event of the folder itself).
    package struct Event: Equatable, Sendable {
        package var watch: Int32
        package var mask: UInt32
        /// Pairs an `IN_MOVED_FROM` with its `IN_MOVED_TO`.
        package var cookie: UInt32
        package var name: String

        package init(watch: Int32, mask: UInt32, cookie: UInt32, name: String) {
            self.watch = watch
            self.mask = mask
            self.cookie = cookie
            self.name = name
        }

        package func has(_ flag: Int32) -> Bool { mask & UInt32(bitPattern: flag) != 0 }
    }

    /// Why a watch or the instance could not be made, with the limit to raise when it is one.
    package struct Failure: Error, CustomStringConvertible {
        package var errno: Int32
        package var description: String
    }

    package let descriptor: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)

    package init() throws(Failure) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            let error = errno
            throw Failure(
                errno: error,
                description: error == EMFILE
                    ? "the inotify instances allowed to this user are used up (fs.inotify.max_user_instances = \(Self.limit("max_inotify_instances"))); raise it: echo fs.inotify.max_user_instances=1024 | sudo tee /etc/sysctl.d/40-uploadd.conf && sudo sysctl --system"
                    : "cannot start watching folders: \(String(cString: strerror(error)))")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Watches the folder at `path` (not through a symlink at its end) for `mask`.
    package func addWatch(_ path: String, mask: UInt32) throws(Failure) -> Int32 {
        let watch = inotify_add_watch(descriptor, path, mask | UInt32(IN_ONLYDIR) | UInt32(IN_DONT_FOLLOW))
        guard watch >= 0 else {
            let error = errno
            throw Failure(
                errno: error,
                description: error == ENOSPC
                    ? "the inotify watches allowed to this user are used up (fs.inotify.max_user_watches = \(Self.limit("max_inotify_watches"))); raise it: echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/40-uploadd.conf && sudo sysctl --system"
                    : "cannot watch \(path): \(String(cString: strerror(error)))")
        }
        return watch
    }

    package func removeWatch(_ watch: Int32) {
        _ = inotify_rm_watch(descriptor, watch)
    }

    /// The events queued now (none when there are none: the descriptor does not block).
    package func readEvents() -> [Event] {
        var events: [Event] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return events }
            buffer.withUnsafeBytes { Self.parse(UnsafeRawBufferPointer(rebasing: $0[..<count]), into: &events) }
        }
    }

    /// The `struct inotify_event`s in `bytes`: wd, mask, cookie, len, then `len` bytes of name
    /// padded with NULs.
    package static func parse(_ bytes: UnsafeRawBufferPointer, into events: inout [Event]) {
        let header = 16
        var offset = 0
        while offset + header <= bytes.count {
            let watch = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let cookie = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            guard offset + header + length <= bytes.count else { return }
            let nameBytes = bytes[(offset + header)..<(offset + header + length)]
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            events.append(Event(watch: watch, mask: mask, cookie: cookie, name: name))
            offset += header + length
        }
    }

    /// A limit as it holds for this process, under /proc/sys/user (per user namespace; the same as
    /// fs.inotify's outside containers), as text ("?" when it cannot be read).
    static func limit(_ name: String) -> String {
        guard let bytes = try? FileOps.readFile("/proc/sys/user/" + name) else { return "?" }
        return String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }
}
