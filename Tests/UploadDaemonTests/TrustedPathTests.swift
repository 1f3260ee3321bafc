import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadPlatform

/// `TrustedPath`: ssh's StrictModes for every file uploadd runs or believes (issue 47, item 2).
@Suite("TrustedPath: files only the user and root can write")
struct TrustedPathTests {
    static let otherUser: uid_t = 65534

    /// The refusal's text after "refusing WHAT PATH: ", or nil when the path is trusted.
    func problem(_ path: String) -> String? {
        do throws(TrustedPath.Refusal) {
            _ = try TrustedPath.check(path, what: "the file")
            return nil
        } catch {
            #expect(error.description.hasPrefix("refusing the file \(path): "))
            return error.problem
        }
    }

    /// A folder of ours (0700) with a file of ours in it (0600), kept while the test runs.
    let directory: TemporaryDirectory
    /// The folder's path as messages name it: the real one (TemporaryDirectory's has a `//`).
    let folder: String
    let file: String

    init() throws {
        let directory = try TemporaryDirectory("trusted-path")
        let folder = directory.path.replacingOccurrences(of: "//", with: "/")
        chmod(folder, 0o700)
        try directory.write("file", "secret\n")
        chmod(folder + "/file", 0o600)
        (self.directory, self.folder, file) = (directory, folder, folder + "/file")
    }

    @Test func aPrivateFileIsTrustedAndAMissingOneIsNot() throws {
        #expect(try TrustedPath.check(file, what: "the file"))
        #expect(try !TrustedPath.check(folder + "/absent", what: "the file"))
        #expect(try !TrustedPath.check(file + "/below-a-file", what: "the file"))
        #expect(try TrustedPath.readFile(file, what: "the file") == Array("secret\n".utf8))
        #expect(throws: SystemError.self) { try TrustedPath.readFile(folder + "/absent", what: "the file") }
    }

    @Test func aFileGroupOrOthersCanWriteIsRefusedWithTheChmodThatFixesIt() throws {
        chmod(file, 0o666)
        #expect(problem(file) == "its group and others can write to it (mode 666); chmod go-w \(file)")
        chmod(file, 0o620)
        #expect(problem(file) == "its group can write to it (mode 620); chmod g-w \(file)")
        chmod(file, 0o602)
        #expect(problem(file) == "others can write to it (mode 602); chmod o-w \(file)")
        // Readable by all is not this check's business (that is a warning elsewhere).
        chmod(file, 0o644)
        #expect(problem(file) == nil)
        // Nor is sticky on a file: only folders have a use for it.
        chmod(file, 0o1666)
        #expect(problem(file)?.contains("chmod go-w") == true)
    }

    @Test func aFolderAboveOthersCanWriteIsRefusedUnlessSticky() throws {
        chmod(folder, 0o777)
        #expect(
            problem(file)
                == "its group and others can write to \(folder), a folder above it (mode 777), and so could replace what is in it; chmod go-w \(folder)"
        )
        chmod(folder, 0o775)
        #expect(problem(file)?.hasSuffix("chmod g-w \(folder)") == true)
        // /tmp's mode: only the file's owner (ours) and the folder's (ours) can rename the file.
        chmod(folder, 0o1777)
        #expect(problem(file) == nil)
        chmod(folder, 0o1770)
        #expect(problem(file) == nil)
        // A missing file in a folder others can write is refused before it could be made there.
        chmod(folder, 0o777)
        #expect(problem(folder + "/absent")?.contains("chmod go-w \(folder)") == true)
    }

    @Test func aFolderChecksItselfAsAFolder() throws {
        chmod(folder, 0o1777)
        #expect(problem(folder) == nil)
        chmod(folder, 0o757)
        #expect(problem(folder) == "others can write to it (mode 757); chmod o-w \(folder)")
    }

    @Test func symlinksAreFollowedAndWhereTheyLeadIsChecked() throws {
        let open = folder + "/open"
        mkdir(open, 0o700)
        let exposed = open + "/exposed"
        try directory.write("open/exposed", "x")
        chmod(exposed, 0o600)
        #expect(symlink(file, folder + "/absolute") == 0)
        #expect(symlink("open/../file", folder + "/relative") == 0)
        #expect(symlink("open", folder + "/folder-link") == 0)
        #expect(problem(folder + "/absolute") == nil)
        #expect(problem(folder + "/relative") == nil)
        #expect(problem(folder + "/folder-link/exposed") == nil)

        chmod(open, 0o777)
        // The path given is safe, but the folder it leads to is not.
        #expect(problem(folder + "/folder-link/exposed")?.hasSuffix("chmod go-w \(open)") == true)
        #expect(symlink("open/exposed", folder + "/to-exposed") == 0)
        chmod(open, 0o700)
        chmod(exposed, 0o666)
        #expect(
            problem(folder + "/to-exposed")
                == "its group and others can write to \(exposed), where it leads (mode 666); chmod go-w \(exposed)")
        // A dangling symlink is a missing file.
        #expect(symlink("nowhere", folder + "/dangling") == 0)
        #expect(try !TrustedPath.check(folder + "/dangling", what: "the file"))
    }

    @Test func aSymlinkLoopIsRefused() throws {
        #expect(symlink("b", folder + "/a") == 0)
        #expect(symlink("a", folder + "/b") == 0)
        #expect(problem(folder + "/a")?.hasPrefix("too many symlinks on its way") == true)
    }

    @Test func aRelativePathStartsAtTheWorkingFolder() throws {
        let relative = "Package.swift"
        guard FileManager.default.fileExists(atPath: relative) else { return }  // run from elsewhere
        #expect(throws: Never.self) { _ = try TrustedPath.check(relative, what: "the file") }
    }

    // MARK: Owners: root can give files away to see what another user's files do

    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can chown a file to another user, the attacker here"))
    func aFileOfAnotherUserIsRefused() throws {
        chown(file, Self.otherUser, Self.otherUser)
        #expect(
            problem(file)
                == "it belongs to uid \(Self.otherUser) (nobody), not to you (uid 0) or root; as root, chown root \(file), or use a file of your own"
        )
    }

    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can chown a file to another user, the attacker here"))
    func aFolderAboveOfAnotherUserIsRefusedEvenClosed() throws {
        let theirs = folder + "/theirs"
        mkdir(theirs, 0o755)
        let inside = theirs + "/file"
        try directory.write("theirs/file", "x")
        chmod(inside, 0o600)
        chown(theirs, Self.otherUser, Self.otherUser)
        // Closed to writes by others, but its owner can rename what is in it.
        #expect(problem(inside)?.hasPrefix("\(theirs), a folder above it, belongs to uid \(Self.otherUser)") == true)
        // Sticky does not help when the folder's owner is someone else.
        chmod(theirs, 0o1777)
        #expect(problem(inside)?.contains("belongs to uid \(Self.otherUser)") == true)
        #expect(problem(file) == nil)
    }

    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can chown a file to another user, the attacker here"))
    func aSymlinkOfAnotherUserIsRefusedEvenToAFileOfOurs() throws {
        let link = folder + "/link"
        #expect(symlink(file, link) == 0)
        #expect(lchown(link, Self.otherUser, Self.otherUser) == 0)
        #expect(
            problem(link)
                == "\(link), a symlink on its way, belongs to uid \(Self.otherUser) (nobody), not to you (uid 0) or root; replace it with a symlink of your own"
        )
    }

    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can chown a file to another user, the attacker here"))
    func aFileOfOursInAStickyFolderOfRootsIsTrustedButNotAnotherUsers() throws {
        // As in /tmp: root's folder, 1777; our file in it is ours alone to rename.
        chmod(folder, 0o1777)
        let ours = folder + "/ours"
        try directory.write("ours", "x")
        chmod(ours, 0o600)
        #expect(problem(ours) == nil)
        let theirs = folder + "/theirs"
        try directory.write("theirs", "x")
        chmod(theirs, 0o600)
        chown(theirs, Self.otherUser, Self.otherUser)
        #expect(problem(theirs)?.hasPrefix("it belongs to uid \(Self.otherUser)") == true)
    }
}
