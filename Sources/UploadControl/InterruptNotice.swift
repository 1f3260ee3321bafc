import Glibc

/// What Ctrl-C says while bars are drawn (`add --wait`, `watch`): it cleared the bars and said
/// nothing, which read as if the uploads had stopped. They go on in uploadd; only the waiting ends.
enum InterruptNotice {
    /// Made before the handler can run: a signal handler may only write bytes that already exist.
    nonisolated(unsafe) private static var message: [UInt8] = []

    static func install() {
        message = Array(
            "\nstopped waiting: the uploads go on in uploadd ('uploadctl list' or 'watch' shows them)\n".utf8)
        signal(SIGINT) { _ in
            // Only async-signal-safe calls: write(2) and _exit(2).
            InterruptNotice.message.withUnsafeBufferPointer { bytes in
                _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count)
            }
            _exit(130)
        }
    }
}
