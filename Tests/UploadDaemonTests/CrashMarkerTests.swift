import CShims
import Glibc
import Testing
import UploadWire

@testable import UploadDaemon
@testable import UploadPlatform

/// The crash marker names the signal and the jobs whose attempts were running.
@Suite("CrashMarker")
struct CrashMarkerTests {
    @Test func theMarkerListsTheRunningJobsTheSignalHandlerSees() throws {
        let directory = try TemporaryDirectory()
        let ids = [JobID(9_000_000_001), JobID(9_000_000_002), JobID(UInt64.max)]
        let slots = ids.compactMap { RunningJobs.add($0) }
        #expect(slots.count == ids.count)
        let gone = try #require(RunningJobs.add(JobID(9_000_000_003)))
        RunningJobs.remove(gone)
        let marker = CrashMarker(stateDirectory: directory.path)
        let fd = open(marker.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        CShims_write_crash_marker(fd, SIGABRT)
        close(fd)
        for slot in slots { RunningJobs.remove(slot) }
        let crash = try #require(marker.previousCrash())
        #expect(crash.signal == SIGABRT)
        // Other tests' schedulers share the set: theirs may be listed too.
        #expect(Set(crash.runningJobs).isSuperset(of: ids))
        #expect(!crash.runningJobs.contains(JobID(9_000_000_003)))
    }

    @Test func markersOfOlderDaemonsAndDamagedOnesStillSayItCrashed() {
        #expect(CrashMarker.parse("11\n") == .init(signal: SIGSEGV, runningJobs: []))
        #expect(CrashMarker.parse("06\n5\n7\n") == .init(signal: SIGABRT, runningJobs: [JobID(5), JobID(7)]))
        #expect(CrashMarker.parse("") == .init(signal: SIGSEGV, runningJobs: []))
        #expect(CrashMarker.parse("x\n0\n12\n-3\n") == .init(signal: SIGSEGV, runningJobs: [JobID(12)]))
    }

    @Test func noMarkerNoCrash() throws {
        let directory = try TemporaryDirectory()
        #expect(CrashMarker(stateDirectory: directory.path).previousCrash() == nil)
    }
}
