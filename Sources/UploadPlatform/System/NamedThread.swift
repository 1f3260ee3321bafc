import CShims
import Foundation

/// Starts one of the daemon's own threads under a name the kernel shows (`top -H`, `ps -L`,
/// `/proc/PID/task/*/comm`, perf, gdb). Foundation's `Thread.name` does not reach the kernel on
/// Linux (swift 6.3: every thread showed as the libdispatch worker that started it), so the
/// thread names itself with `pthread_setname_np` before it runs `body`.
package enum NamedThread {
    /// `name`: at most 15 bytes, the kernel's limit.
    package static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        precondition(name.utf8.count <= 15, "thread name \(name) is longer than 15 bytes")
        let thread = Thread {
            _ = CShims_name_this_thread(name)
            body()
        }
        thread.name = name
        thread.start()
    }
}
