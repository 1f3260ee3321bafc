import Foundation
import Testing
import UploadWire

@testable import UploadControl

@Suite("uploadctl folders")
struct FoldersCommandTests {
    @Test func itListsOrPausesOrResumesOneFolder() throws {
        #expect(try FoldersCommand(arguments: []).action == .list)
        #expect(try FoldersCommand(arguments: ["list"]).action == .list)
        #expect(try FoldersCommand(arguments: ["pause", "shots"]).action == .pause("shots"))
        #expect(try FoldersCommand(arguments: ["resume", "shots"]).action == .resume("shots"))
        for wrong in [["pause"], ["resume", "a", "b"], ["stop", "shots"], ["list", "x"]] {
            #expect(throws: UsageError.self) { try FoldersCommand(arguments: wrong) }
        }
    }

    @Test func theTableLinesUpAndSaysWhyAFolderIsNotWatched() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        let folders = [
            FolderInfo(
                name: "screenshots", path: "/home/u/Pictures/Screenshots", destination: "nas:shots/", state: .watching,
                reason: nil, taken: 120, queued: 2, uploaded: 117, failed: 1,
                lastUpload: FolderInfo.LastUpload(
                    id: JobID(7), source: "/home/u/Pictures/Screenshots/a.png", at: now - 150)),
            FolderInfo(
                name: "docs", path: "/srv/docs", destination: "file:///backup/", state: .waiting,
                reason: "/srv/docs does not exist", taken: 0, queued: 0, uploaded: 0, failed: 0, lastUpload: nil),
        ]
        #expect(
            FoldersCommand.table(folders, now: now) == [
                "NAME         STATE     TAKEN  QUEUED  UPLOADED  FAILED  LAST UPLOAD",
                "screenshots  watching    120       2       117       1  2m ago: a.png",
                "docs         waiting       0       0         0       0  -",
                "  docs: /srv/docs does not exist",
            ])
    }

    @Test func aFolderEncodesAsTheProtocolSaysAndDecodesBack() throws {
        let folder = FolderInfo(
            name: "shots", path: "/p", destination: "nas:x/", state: .paused, reason: nil, taken: 3, queued: 1,
            uploaded: 2, failed: 0, lastUpload: nil)
        let json = String(decoding: try JSONEncoder.sorted.encode(folder), as: UTF8.self)
        #expect(
            json
                == #"{"failed":0,"last_upload":null,"name":"shots","path":"\/p","queued":1,"state":"paused","taken":3,"to":"nas:x\/","uploaded":2}"#
        )
        #expect(try JSONDecoder().decode(FolderInfo.self, from: Data(json.utf8)) == folder)
        let unknown = try JSONDecoder().decode(
            FolderInfo.self, from: Data(json.replacingOccurrences(of: "paused", with: "frozen").utf8))
        #expect(unknown.stateName == "frozen" && unknown.state == nil, "a state this client does not know")
    }
}

extension JSONEncoder {
    fileprivate static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
