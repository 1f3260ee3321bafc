import Foundation
import Glibc
import Testing

@testable import UploadDaemon
@testable import UploadPlatform

/// The helper runner against real programs (sh, cat, python3): what a decoder that misbehaves
/// would do, and what the daemon makes of it.
@Suite(.serialized)
struct HelperProcessTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("helper") }

    func files(_ input: String) throws -> (in: Int32, out: Int32, outPath: String) {
        let inPath = try directory.write("in-\(UUID().uuidString)", input)
        let outPath = directory.path + "/out-\(UUID().uuidString)"
        let inFD = open(inPath, O_RDONLY | O_CLOEXEC)
        let outFD = open(outPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        return (inFD, outFD, outPath)
    }

    func sh(_ script: String, timeout: Duration = .seconds(20)) -> HelperProcess {
        HelperProcess(executable: "/bin/sh", arguments: ["-c", script], timeout: timeout)
    }

    @Test func itReadsStdinWritesStdoutAndReturnsItsStderr() async throws {
        let (input, output, outPath) = try files("hello helper\n")
        defer { close(input); close(output) }
        let outcome = try await sh("tr a-z A-Z; echo done >&2").run(input: input, output: output)
        #expect(outcome.stderr == "done")
        #expect(outcome.maxResidentKiB > 0)
        #expect(try String(contentsOfFile: outPath, encoding: .utf8) == "HELLO HELPER\n")
    }

    @Test func itInheritsNoDescriptorOfTheDaemon() async throws {
        let (input, output, outPath) = try files("")
        defer { close(input); close(output) }
        let leaked = open("/dev/null", O_RDONLY)  // without O_CLOEXEC, as a careless open would be
        defer { close(leaked) }
        _ = try await sh("ls /proc/self/fd").run(input: input, output: output)
        // 0, 1, 2, and the descriptor ls itself opened to list them.
        let listed = try String(contentsOfFile: outPath, encoding: .utf8).split(separator: "\n").compactMap { Int($0) }
        #expect(listed.filter { $0 > 3 }.isEmpty, "open in the helper: \(listed)")
        #expect(!listed.contains(Int(leaked)) || leaked <= 3)
    }

    @Test func aFailureExitCarriesTheEndOfItsStderr() async throws {
        let (input, output, _) = try files("")
        defer { close(input); close(output) }
        await #expect(throws: HelperProcess.Failure.exited(status: 3, message: "not an image: bad header")) {
            _ = try await sh("echo 'not an image: bad header' >&2; exit 3").run(input: input, output: output)
        }
    }

    @Test func aCrashIsReportedWithItsSignalAndTheDaemonGoesOn() async throws {
        let (input, output, _) = try files("")
        defer { close(input); close(output) }
        do {
            _ = try await sh("kill -SEGV $$").run(input: input, output: output)
            Issue.record("a crash passed for success")
        } catch let failure as HelperProcess.Failure {
            guard case .killed(let signal, _) = failure else {
                Issue.record("\(failure)")
                return
            }
            #expect(signal == SIGSEGV)
            #expect(failure.description.contains("signal 11"))
        }
    }

    @Test func aHelperThatHangsIsKilledAtItsTimeout() async throws {
        let (input, output, _) = try files("")
        defer { close(input); close(output) }
        let start = ContinuousClock.now
        await #expect(throws: HelperProcess.Failure.timedOut(.milliseconds(300))) {
            _ = try await sh("sleep 30", timeout: .milliseconds(300)).run(input: input, output: output)
        }
        #expect(ContinuousClock.now - start < .seconds(5))
    }

    @Test func theMemoryLimitHoldsBeforeTheHelperRunsAnything() async throws {
        let (input, output, _) = try files("")
        defer { close(input); close(output) }
        var helper = HelperProcess(
            executable: "/usr/bin/python3", arguments: ["-c", "x = bytearray(400 << 20); print(len(x))"])
        helper.memoryLimit = 200 << 20
        await #expect(throws: HelperProcess.Failure.self) {
            _ = try await helper.run(input: input, output: output)
        }
        helper.memoryLimit = nil
        _ = try await helper.run(input: input, output: output)
    }

    @Test func theCPULimitStopsABusyLoop() async throws {
        let (input, output, _) = try files("")
        defer { close(input); close(output) }
        var helper = sh("while :; do :; done")
        helper.cpuSeconds = 1
        do {
            _ = try await helper.run(input: input, output: output)
            Issue.record("a busy loop ran to its end")
        } catch let failure as HelperProcess.Failure {
            guard case .killed(let signal, _) = failure else {
                Issue.record("\(failure)")
                return
            }
            #expect(signal == SIGXCPU || signal == SIGKILL)
        }
    }

    @Test func cancellingTheTaskKillsTheHelper() async throws {
        let (input, output, _) = try files("")
        defer { close(input); close(output) }
        let helper = sh("sleep 30")
        let start = ContinuousClock.now
        let task = Task { try await helper.run(input: input, output: output) }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        #expect(ContinuousClock.now - start < .seconds(5))
    }

    enum Ending: String, CaseIterable, Sendable { case success, failure, crash, timeout, cancel }

    /// Each run has a temporary folder of its own (TMPDIR), not /tmp: 0700, beneath the root it
    /// was given, and gone once the run is over, whatever the helper left there and however it
    /// ended.
    @Test(arguments: Ending.allCases)
    func eachRunHasAPrivateTemporaryFolderRemovedAfterIt(_ ending: Ending) async throws {
        let (input, output, outPath) = try files("")
        defer { close(input); close(output) }
        let root = directory.path + "/helper-tmp"
        let end =
            switch ending {
            case .success: "exit 0"
            case .failure: "exit 3"
            case .crash: "kill -SEGV $$"
            case .timeout, .cancel: "sleep 30"
            }
        // What it leaves: a file, a folder it made unreadable, a file in it.
        var helper = sh(
            """
            echo "$TMPDIR"; stat -c %a "$TMPDIR"; echo x > "$TMPDIR/vips-1.v"
            mkdir "$TMPDIR/sub" && echo y > "$TMPDIR/sub/z" && chmod 000 "$TMPDIR/sub"; \(end)
            """, timeout: ending == .timeout ? .milliseconds(500) : .seconds(20))
        helper.temporaryRoot = root
        let task = Task { try await helper.run(input: input, output: output) }
        if ending == .cancel {
            #expect(eventually { (try? String(contentsOfFile: outPath, encoding: .utf8))?.contains("700") == true })
            task.cancel()
        }
        _ = try? await task.value
        let said = try String(contentsOfFile: outPath, encoding: .utf8).split(separator: "\n").map(String.init)
        let folder = try #require(said.first, "the helper said nothing")
        #expect(folder.hasPrefix(root + "/run-"), "TMPDIR: \(folder)")
        #expect(said.dropFirst().first == "700", "mode \(said)")
        #expect(!FileManager.default.fileExists(atPath: folder), "\(ending): \(folder) is still there")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root).isEmpty)
    }

    /// Waits up to 5 s for `condition`.
    func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    @Test func aMissingProgramFailsToStartWithItsName() async throws {
        let (input, output, _) = try files("")
        defer { close(input); close(output) }
        await #expect(throws: HelperProcess.Failure.couldNotStart("/nonexistent/helper: No such file or directory")) {
            _ = try await HelperProcess(executable: "/nonexistent/helper", arguments: []).run(
                input: input, output: output)
        }
    }
}
