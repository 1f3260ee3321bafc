import Testing
import UploadWire

@testable import UploadCore

@Test func zzLayoutProbe() {
    print(
        "LAYOUT Fields", MemoryLayout<Job.Fields>.size, "JobHistory", MemoryLayout<JobHistory>.size,
        "SourceSnapshot?", MemoryLayout<SourceSnapshot?>.size, "Int64?", MemoryLayout<Int64?>.size)
}
