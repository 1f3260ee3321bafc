import Foundation
import Testing
import UploadWire

@testable import UploadDaemon
@testable import UploadPlatform

@Suite("Reading whole files")
struct FileOpsTests {
    /// Sizes around the first read (the file's size and one byte more) and the smallest buffer.
    @Test(arguments: [0, 1, 4095, 4096, 4097, 300_001])
    func aFileIsReadWholeWhateverItsSize(size: Int) throws {
        let directory = try TemporaryDirectory()
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let path = try directory.write("file", bytes: bytes)
        #expect(try FileOps.readFile(path, followSymlinks: false) == bytes)
    }

    /// A file whose size says nothing (procfs says 0) is still read to its end.
    @Test func aFileOfUnknownSizeIsReadToItsEnd() throws {
        let read = try FileOps.readFile("/proc/self/status")
        #expect(read.count > 100)
        #expect(String(decoding: read, as: UTF8.self).contains("VmRSS"))
    }

    @Test func aSymlinkIsRefusedWhenAsked() throws {
        let directory = try TemporaryDirectory()
        let target = try directory.write("target", "x")
        #expect(symlink(target, directory.path + "/link") == 0)
        #expect(throws: SystemError.self) { try FileOps.readFile(directory.path + "/link", followSymlinks: false) }
    }
}
