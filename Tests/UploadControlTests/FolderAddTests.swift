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
}
