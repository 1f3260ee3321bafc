import Foundation
import Glibc
import Testing
import UploadCore

@testable import UploadDaemon

/// `after = delete | move:DIR`: only the version uploaded, and never one put in its place.
@Suite("Watched folders: after the upload")
struct FolderAfterUploadTests {
    let root: TemporaryDirectory
    let folder: String

    init() throws {
        root = try TemporaryDirectory()
        folder = root.path + "/watched"
        mkdir(folder, 0o755)
    }

    func write(_ name: String, _ text: String) throws -> FolderAfterUpload.Version {
        let path = folder + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        var info = stat()
        #expect(stat(path, &info) == 0)
        return FolderAfterUpload.Version(
            path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modifiedNanoseconds: FolderScan.modified(info))
    }

    func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    @Test func theUploadedVersionIsDeletedAndOnlyIt() throws {
        let shot = try write("shot.png", "pixels")
        #expect(FolderAfterUpload.perform(.delete, on: shot) == .deleted)
        #expect(!exists(shot.path))
        #expect(FolderAfterUpload.perform(.delete, on: shot) == .gone, "done twice: nothing happens")

        let edited = try write("edited.png", "first")
        _ = try write("edited.png", "second, longer")  // changed in place since its upload
        #expect(FolderAfterUpload.perform(.delete, on: edited) == .changed)
        #expect(exists(edited.path))

        let replaced = try write("replaced.png", "old")
        #expect(rename(try write(".new.tmp", "a new version").path, replaced.path) == 0)  // saved over it
        #expect(FolderAfterUpload.perform(.delete, on: replaced) == .changed)
        #expect(exists(replaced.path))
    }

    @Test func aDeleteCutOffAfterItsRenameIsFinished() throws {
        let shot = try write("shot.png", "pixels")
        #expect(rename(shot.path, folder + "/" + FolderAfterUpload.asidePrefix + "shot.png") == 0)
        #expect(FolderAfterUpload.perform(.delete, on: shot) == .deleted)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    @Test func aDeleteCutOffAfterItsRenameIsFinishedEvenWithANewFileAtTheName() throws {
        let shot = try write("shot.png", "pixels")
        #expect(rename(shot.path, folder + "/" + FolderAfterUpload.asidePrefix + "shot.png") == 0)
        _ = try write("shot.png", "a new photo, saved since")
        #expect(FolderAfterUpload.perform(.delete, on: shot) == .deleted)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["shot.png"])
        #expect(try String(contentsOfFile: shot.path, encoding: .utf8) == "a new photo, saved since")
    }

    @Test func aSymlinkIsLeftWhereItIs() throws {
        let target = try write(".target.png", "pixels")
        let link = folder + "/link.png"
        #expect(symlink(".target.png", link) == 0)
        var version = target
        version.path = link
        #expect(FolderAfterUpload.perform(.delete, on: version) == .symlink)
        #expect(FolderAfterUpload.perform(.move(root.path + "/done"), on: version) == .symlink)
        #expect(exists(link) && exists(target.path))
        #expect(FolderAfter(journalText: FolderAfter.move("/d").journalText) == .move("/d"))
        #expect(FolderAfter(journalText: "delete") == .delete && FolderAfter(journalText: nil) == nil)
        #expect(FolderAfter(journalText: "shred") == nil, "one this daemon does not know: the file is kept")
    }

    @Test func aMoveKeepsWhatIsThereAndNamesTheFileAnew() throws {
        let done = root.path + "/done/2026"  // made when missing
        let first = try write("a.jpg", "one")
        #expect(FolderAfterUpload.perform(.move(done), on: first) == .moved(to: done + "/a.jpg"))
        let second = try write("a.jpg", "two")
        #expect(FolderAfterUpload.perform(.move(done), on: second) == .moved(to: done + "/a (2).jpg"))
        #expect(try String(contentsOfFile: done + "/a.jpg", encoding: .utf8) == "one")
        #expect(try String(contentsOfFile: done + "/a (2).jpg", encoding: .utf8) == "two")
        #expect(FolderAfterUpload.perform(.move(done), on: second) == .gone)
        #expect(FolderAfterUpload.candidates(for: ".bashrc")[1] == ".bashrc (2)")
        #expect(FolderAfterUpload.candidates(for: "notes")[2] == "notes (3)")
    }

    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can give a symlink to another user, the attacker here"
        ))
    func aMoveIntoAFolderBehindAnotherUsersSymlinkIsRefused() throws {
        let theirs = root.path + "/theirs"
        mkdir(theirs, 0o777)
        #expect(symlink(theirs, root.path + "/done") == 0)
        #expect(lchown(root.path + "/done", 65534, 65534) == 0)
        let shot = try write("shot.png", "pixels")
        guard case .failed(let why) = FolderAfterUpload.perform(.move(root.path + "/done"), on: shot) else {
            Issue.record("moved through another user's symlink")
            return
        }
        #expect(why.contains("cannot open \(root.path)/done"))
        #expect(exists(shot.path))
    }
}
