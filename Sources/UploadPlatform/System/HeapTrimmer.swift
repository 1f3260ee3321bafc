import CShims
import Dispatch
import Synchronization

/// Keeps a daemon that runs for weeks at its idle size: glibc's allocator keeps what it freed in
/// its per-thread arenas, and after thousands of jobs come and go that is hundreds of MiB an idle
/// daemon never uses again (issue: `malloc_trim(0)` in a debugger brought 68 MiB back to 14).
///
/// Two measures: few arenas (the daemon's threads are few and known: the cooperative pool, the
/// HTTP, journal, network and bus threads), and a trim when much was just freed (a clear, a
/// compaction) or the queue has gone idle.
package enum HeapTrimmer {
    /// Arenas for the whole process: enough that the HTTP and journal threads rarely wait on a lock.
    package static let arenas: Int32 = 2

    /// Blocks this big or bigger get pages of their own, given back when freed. glibc raises
    /// its threshold (128 KiB at first) to the size of each such block freed, up to 32 MiB: after
    /// one page of `job.list` (a few MiB of values and JSON), every later page's blocks came from
    /// the heap and stayed there when freed. With a million jobs queued, paging through them
    /// raised the daemon's RSS from 396 to 431 MiB, and kept it there. Above libcurl's upload
    /// buffer (2 MiB a request, `CurlRequest.uploadBufferSize`): a chunked upload's parts reuse
    /// heap memory rather than each mapping and faulting in a buffer of its own.
    package static let mapOfItsOwn: Int32 = 4 << 20

    package static func limitArenas() {
        if CShims_limit_malloc_arenas(arenas) != 0 { Log.debug("malloc refused M_ARENA_MAX=\(arenas)") }
        if CShims_set_mmap_threshold(mapOfItsOwn) != 0 { Log.debug("malloc refused M_MMAP_THRESHOLD") }
    }

    /// Gives freed memory back to the kernel. Takes a few milliseconds with a big heap: call it
    /// when nothing waits on it.
    package static func trim() {
        releaseCaches.withLock { $0 }?()
        _ = CShims_trim_heap()
    }

    /// What gives cached memory back before each trim (the HTTP code's idle easy handles), on the
    /// thread that trims; set once at start-up (`Daemon`).
    package static let releaseCaches = Mutex<(@Sendable () -> Void)?>(nil)

    /// How long after the last request the trim runs: a clear's answer is encoded, sent and freed
    /// after the clear itself, so the trim waits until the requests have stopped for this long.
    package static let quiet = DispatchTimeInterval.seconds(1)

    /// How long after a trim it runs once more: libdispatch ends a worker thread idle for 5 s, and
    /// what the thread's malloc cache held goes back to the arena only then. After 100,000 queued
    /// jobs were cleared, this second trim gave back 5 MiB more (RSS 40 MiB to 35) that the first
    /// could not.
    package static let afterIdleThreadsEnd = DispatchTimeInterval.seconds(6)

    /// The last time a trim was asked for, and whether one is scheduled.
    private static let requests = Mutex<(last: DispatchTime, scheduled: Bool)>((.now(), false))
    private static let queue = DispatchQueue(label: "uploadd.heap-trim", qos: .utility)

    /// Trims once nobody has asked for a trim for `quiet`; many requests in a row trim once.
    package static func trimSoon() {
        let schedule = requests.withLock { state in
            state.last = .now()
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule { queue.asyncAfter(deadline: .now() + quiet) { trimWhenQuiet() } }
    }

    private static func trimWhenQuiet() {
        let wait: DispatchTime? = requests.withLock { state in
            let due = state.last + quiet
            if due > .now() { return due }
            state.scheduled = false
            return nil
        }
        if let wait {
            queue.asyncAfter(deadline: wait) { trimWhenQuiet() }
        } else {
            trim()
            queue.asyncAfter(deadline: .now() + afterIdleThreadsEnd) { trimAgainUnlessScheduled() }
        }
    }

    /// The second trim, unless a request since has scheduled another trim (which has its own).
    private static func trimAgainUnlessScheduled() {
        if !requests.withLock({ $0.scheduled }) { trim() }
    }
}
