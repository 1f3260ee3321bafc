import Foundation
import Testing
import UploadWire

@testable import UploadControl

@Suite struct FolderAddTests {
    @Test func pathsFromStdinAndNulSeparators() throws {
        let add = try AddCommand(arguments: ["-", "-0", "--to", "nas:", "--exclude", "*.tmp", "--hidden", "--follow"])
        #expect(add.readsStandardInput && add.nulSeparated && add.paths.isEmpty)
        #expect(add.walker == FolderWalker(excludes: ["*.tmp"], includeHidden: true, followSymlinks: true))
        #expect(throws: UsageError.self) { try AddCommand(arguments: ["a.jpg", "-0", "--to", "nas:"]) }
        #expect(try ArgumentParser.parse(["-5"], options: AddCommand.options).positionals == ["-5"])
    }

    @Test func aFoldersFilesGoUnderTheDestinationWithEncodedNames() throws {
        let add = try AddCommand(arguments: ["trip", "--to", "https://h/up/"])
        #expect(try add.destination(forFolder: "") == "https://h/up/")
        #expect(try add.destination(forFolder: "trip/day 1/#2") == "https://h/up/trip/day%201/%232/")
        #expect(try AddCommand(arguments: ["t", "--to", "nas:"]).destination(forFolder: "t/ü") == "nas:t/%C3%BC/")
        let file = try AddCommand(arguments: ["t", "--to", "https://h/up/name.jpg"])
        #expect(throws: UsageError.self) { try file.destination(forFolder: "t") }
    }

    @Test func excludesMatchTheNameOrThePathInsideTheFolder() {
        let walker = FolderWalker(excludes: ["*.tmp", "cache/*", "Thumbs.db"])
        #expect(walker.isExcluded(name: "a.tmp", relativePath: "day1/a.tmp"))
        #expect(walker.isExcluded(name: "x.jpg", relativePath: "cache/x.jpg"))
        #expect(!walker.isExcluded(name: "x.jpg", relativePath: "day1/cache/x.jpg"), "a path glob starts at the folder")
        #expect(walker.isExcluded(name: "Thumbs.db", relativePath: "a/b/Thumbs.db"))
        #expect(!walker.isExcluded(name: "a.jpg", relativePath: "a.jpg"))
    }

    @Test func theWalkSkipsHiddenFilesAndSymlinksAndSortsNames() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("walk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let top = root.appendingPathComponent("top")
        for path in ["b.jpg", "a.jpg", "sub/c.jpg", ".hidden/d.jpg", ".e.jpg", "sub/deeper/f.jpg"] {
            let url = top.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("x".utf8).write(to: url)
        }
        try FileManager.default.createSymbolicLink(
            atPath: top.appendingPathComponent("loop").path, withDestinationPath: top.path)
        func walk(_ walker: FolderWalker) -> (found: [String], problems: [String]) {
            var found: [String] = []
            var problems: [String] = []
            walker.walk(top.path) {
                found.append("\($0.folder)|\(($0.path as NSString).lastPathComponent)")
            } problem: {
                problems.append($0.message)
            }
            return (found, problems)
        }
        let plain = walk(FolderWalker())
        #expect(plain.found == ["top|a.jpg", "top|b.jpg", "top/sub|c.jpg", "top/sub/deeper|f.jpg"])
        #expect(plain.problems.isEmpty)
        let everything = walk(FolderWalker(includeHidden: true, followSymlinks: true))
        #expect(everything.found.count == 6, "\(everything.found)")
        #expect(everything.problems == ["a symlink loop; skipped"])
    }

    /// Paths named one by one (as a shell expands `dir/*`) are looked up in their folder, opened
    /// once; what each finds is what a look-up of the whole path finds.
    @Test func namedPathsInOneFolderAreFoundThroughItOnce() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("named-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/real/sub", withIntermediateDirectories: true)
        for name in ["a.jpg", "b.jpg", "sub/c.jpg"] {
            try Data(name.utf8).write(to: URL(fileURLWithPath: root + "/real/" + name))
        }
        #expect(symlink(root + "/real", root + "/mine") == 0)
        #expect(symlink(root + "/real/a.jpg", root + "/real/link.jpg") == 0)
        let folders = NamedFolders()
        var found: [String: SourceIdentity?] = [:]
        var problems: [String] = []
        for path in [
            "real/a.jpg", "real/b.jpg", "mine/b.jpg", "real/link.jpg", "real/missing.jpg", "gone/x.jpg", "real",
        ] {
            FolderWalker().walk(root + "/" + path, folders: folders) {
                found[$0.path.replacingOccurrences(of: root + "/", with: "")] = $0.identity
            } problem: {
                problems.append($0.message)
            }
        }
        #expect(problems.isEmpty)
        #expect(
            Set(found.keys) == [
                "real/a.jpg", "real/b.jpg", "mine/b.jpg", "real/link.jpg", "real/missing.jpg", "gone/x.jpg",
                "real/sub/c.jpg",
            ])
        var info = stat()
        #expect(stat(root + "/real/a.jpg", &info) == 0)
        #expect(found["real/a.jpg"] == SourceIdentity(info))
        #expect(found["real/link.jpg"] == SourceIdentity(info), "the user's own symlink is followed")
        #expect(found["real/missing.jpg"] == .some(nil) && found["gone/x.jpg"] == .some(nil), "the daemon says why")
        #expect(stat(root + "/real/b.jpg", &info) == 0)
        #expect(found["mine/b.jpg"] == SourceIdentity(info))
    }

    /// Another user's symlink on the way to a path named, or at its end, is refused, whether the
    /// folder was opened for an earlier path or not.
    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can give a symlink to another user, the attacker here"
        ))
    func anotherUsersSymlinkOnTheWayIsRefused() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("foreign-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/real", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/real/a.jpg"))
        #expect(symlink(root + "/real", root + "/theirs") == 0 && lchown(root + "/theirs", 65534, 65534) == 0)
        #expect(symlink(root + "/real/a.jpg", root + "/real/their.jpg") == 0)
        #expect(lchown(root + "/real/their.jpg", 65534, 65534) == 0)
        let folders = NamedFolders()
        var found: [String] = []
        var problems: [String] = []
        for path in ["real/a.jpg", "real/their.jpg", "theirs/a.jpg", "theirs/a.jpg", "real/a.jpg"] {
            FolderWalker().walk(root + "/" + path, folders: folders) {
                found.append($0.path)
            } problem: {
                problems.append($0.message)
            }
        }
        #expect(found == [root + "/real/a.jpg", root + "/real/a.jpg"])
        #expect(
            problems
                == [
                    "\(root)/real/their.jpg is a symlink of another user (uid 65534)",
                    "\(root)/theirs is a symlink of another user (uid 65534)",
                    "\(root)/theirs is a symlink of another user (uid 65534)",
                ].map {
                    $0
                        + ", who may have put it there to make you upload what it points to; add it with --follow if you trust it"
                })
        var followed: [String] = []
        FolderWalker(followSymlinks: true).walk(root + "/theirs/a.jpg", folders: folders) {
            followed.append($0.path)
        } problem: { _ in
        }
        #expect(followed == [root + "/theirs/a.jpg"], "--follow trusts it")
    }
}
