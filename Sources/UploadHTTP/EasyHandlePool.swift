import CCurl
import Synchronization

/// libcurl easy handles of finished small requests, kept for the next ones.
///
/// A new handle allocates its state (several KiB, zeroed) and, at its first transfer, a 16 KiB
/// download buffer and its upload buffer; a handle put through `curl_easy_reset` keeps both
/// buffers (libcurl reallocates the upload buffer only when a request asks for another size),
/// so a folder of small files reuses them instead of allocating and freeing ~100 KiB per file.
/// The reset forgets every option, credentials included: nothing of one request reaches the next.
/// Connections are the multi handle's, not the easy handle's, and are reused either way.
package enum EasyHandlePool {
    /// At least as many as run at once when files are small (the scheduler's
    /// `TransferSlots.widest`, which `EasyHandlePoolTests` holds to it).
    package static let capacity = 8
    /// A handle whose upload buffer is bigger goes away: kept, it would hold up to 2 MiB unused.
    package static let largestKeptUploadBuffer = 64 << 10

    /// An idle handle, owned by the pool; whoever takes it owns it, and it is used by one thread at
    /// a time (libcurl's rule for easy handles).
    private struct IdleHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    private static let idle = Mutex<[IdleHandle]>([])

    /// A reset handle from the pool, or a new one; nil when libcurl cannot make one.
    package static func take() -> UnsafeMutableRawPointer? {
        if let kept = idle.withLock({ $0.popLast() }) { return kept.pointer }
        return curl_easy_init()
    }

    /// Takes back the handle of a finished request (no longer in the multi handle): reset and kept
    /// when there is room and its upload buffer is small, else cleaned up. `freeAttachments` frees
    /// what the request's options pointed to (headers, MIME parts, error buffer): it runs once the
    /// handle has forgotten them, and before another request can take the handle.
    package static func giveBack(
        _ handle: UnsafeMutableRawPointer, uploadBufferSize: Int, freeAttachments: () -> Void
    ) {
        guard uploadBufferSize <= largestKeptUploadBuffer else {
            curl_easy_cleanup(handle)
            freeAttachments()
            return
        }
        curl_easy_reset(handle)
        freeAttachments()
        let kept = idle.withLock { idle in
            guard idle.count < capacity else { return false }
            idle.append(IdleHandle(pointer: handle))
            return true
        }
        if !kept { curl_easy_cleanup(handle) }
    }

    /// How many wait in the pool now.
    package static var idleCount: Int { idle.withLock { $0.count } }

    /// Cleans up every idle handle (the queue went idle: their buffers go back to the allocator).
    package static func drain() {
        let drained = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle
        }
        for handle in drained { curl_easy_cleanup(handle.pointer) }
    }
}
