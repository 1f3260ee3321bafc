import Foundation
import Testing
import UploadCore
import UploadWire

/// The shell completions of contrib/completions, loaded by real bash, zsh and fish, completing
/// job IDs from a real daemon (contrib/test/check-completions does the shell side).
@Suite(.serialized)
final class CompletionTests {
    @Test func bashCompletesJobIDsFromTheDaemonAndZshAndFishLoadTheirFiles() throws {
        let daemon = try DaemonProcess(name: "completions")
        try daemon.start()
        defer { daemon.stop() }
        let files = try TestPaths.scratch("completion-files")
        let out = try TestPaths.scratch("completion-out")
        var ids: [JobID] = []
        for name in ["a.txt", "b.txt", "c.txt"] {
            let path = files.appendingPathComponent(name).path
            try Data(name.utf8).write(to: URL(fileURLWithPath: path))
            ids += try daemon.add([path], to: out.absoluteString + "/")
        }
        let script = TestPaths.repository.appendingPathComponent("contrib/test/check-completions").path
        let uploadctl = TestPaths.binaries.appendingPathComponent("uploadctl").path
        let checked = try Command.run(script, [uploadctl, daemon.socket], timeout: 120)
        #expect(checked.status == 0, "\(checked.stderr.suffix(2000))")
        #expect(checked.stdout == ids.map { "\($0)\n" }.joined(), "\(checked)")
    }
}
