import CShims
import Foundation
import Glibc
import UploadCore
import UploadWire

/// A file in the state directory that a fatal signal leaves behind (`CShims_install_crash_marker`),
/// so that the next start knows the daemon crashed (and the jobs that were running are suspects),
/// rather than being killed or losing power.
struct CrashMarker {
    let path: String

    init(stateDirectory: String) { path = stateDirectory + "/crashed" }

    /// The fatal signal of the last run, when it crashed.
    func previousCrash() -> Int32? {
        guard let bytes = try? FileOps.readFile(path, followSymlinks: false) else { return nil }
        return Int32(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? SIGSEGV
    }

    /// Forgets the last crash, once its consequences are in the journal.
    func clear() { unlink(path) }

    /// From now on, a fatal signal leaves the marker.
    func install() throws {
        try syscall("install the crash handler", path: path) { CShims_install_crash_marker(path) }
    }
}
