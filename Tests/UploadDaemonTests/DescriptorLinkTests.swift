import Foundation
import Testing

@testable import UploadDaemon

/// `SourceCheck.descriptorLink`: which paths name an open file of whichever process reads them.
@Suite struct DescriptorLinkTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory() }

    @Test(arguments: ["/dev/fd/0", "/dev/fd/63", "/dev/stdin", "/proc/self/fd/0", "/proc/self/fd/63"])
    func aDescriptorsPathIsFound(path: String) {
        #expect(SourceCheck.descriptorLink(path) != nil, "\(path)")
    }

    @Test func aLinkToADescriptorIsFoundAndALinkToAFileIsNot() throws {
        let file = directory.path + "/file"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        try FileManager.default.createSymbolicLink(atPath: directory.path + "/to-file", withDestinationPath: "file")
        try FileManager.default.createSymbolicLink(atPath: directory.path + "/to-fd", withDestinationPath: "/dev/fd/1")
        try FileManager.default.createSymbolicLink(
            atPath: directory.path + "/fds", withDestinationPath: "/proc/self/fd")
        #expect(SourceCheck.descriptorLink(file) == nil)
        #expect(SourceCheck.descriptorLink(directory.path + "/to-file") == nil)
        #expect(SourceCheck.descriptorLink(directory.path + "/missing") == nil)
        #expect(SourceCheck.descriptorLink(directory.path + "/to-fd") != nil)
        #expect(SourceCheck.descriptorLink(directory.path + "/fds/1") != nil, "through a link to the folder")
    }
}
