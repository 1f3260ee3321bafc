import CShims
import Foundation
import Glibc
import UploadCore
import UploadWire

/// A file in the state directory that a fatal signal leaves behind (`CShims_install_crash_marker`),
/// so that the next start knows the daemon crashed (and the jobs that were running are suspects),
/// rather than being killed or losing power.
///
/// It lists the jobs whose attempts were running (`RunningJobs`) as well: an attempt's "running"
/// record may still wait in the journal's queue when the daemon dies (`Scheduler.startAttempt`).
package struct CrashMarker {
    /// What the last run left behind when it crashed.
    package struct PreviousCrash: Equatable {
        package var signal: Int32
        package var runningJobs: [JobID]
    }

    package let path: String

    package init(stateDirectory: String) { path = stateDirectory + "/crashed" }

    /// The last run's crash, if it crashed.
    package func previousCrash() -> PreviousCrash? {
        guard let bytes = try? FileOps.readFile(path, followSymlinks: false) else { return nil }
        return Self.parse(String(decoding: bytes, as: UTF8.self))
    }

    /// The marker's text: the signal on the first line (SIGSEGV if unreadable: it crashed all the
    /// same), then a job ID per line (older daemons wrote the signal alone).
    package static func parse(_ text: String) -> PreviousCrash {
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let signal = lines.first.flatMap { Int32($0) } ?? SIGSEGV
        return PreviousCrash(signal: signal, runningJobs: lines.dropFirst().compactMap { JobID(String($0)) })
    }

    /// Forgets the last crash, once its consequences are in the journal.
    package func clear() { unlink(path) }

    /// From now on, a fatal signal leaves the marker.
    package func install() throws {
        try syscall("install the crash handler", path: path) { CShims_install_crash_marker(path) }
    }
}

/// The jobs whose attempts run now, as the crash marker lists them: process-wide, lock-free, for
/// the signal handler to read.
package enum RunningJobs {
    /// A job's place in the set, to take it out again.
    package struct Slot: Sendable {
        fileprivate let index: Int32
    }

    /// Nil when the set is full (more attempts than it holds): the caller journals the start at once.
    package static func add(_ id: JobID) -> Slot? {
        let index = CShims_running_job_add(id.rawValue)
        return index >= 0 ? Slot(index: index) : nil
    }

    package static func remove(_ slot: Slot) { CShims_running_job_remove(slot.index) }
}
