import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

@Suite("Hooks and notifications: config and messages")
struct HookSettingsTests {
    @Test(arguments: [
        ("notify-send 'Upload done' \"$UPLOAD_ID\"", ["notify-send", "Upload done", "$UPLOAD_ID"]),
        ("sh -c 'echo \"a b\" >> log'", ["sh", "-c", "echo \"a b\" >> log"]),
        ("/usr/bin/x a\\ b \"c\\\"d\" ''", ["/usr/bin/x", "a b", "c\"d", ""]),
        ("  spaced\targs  ", ["spaced", "args"]),
    ])
    func commandsSplitLikeAShellWithoutExpanding(text: String, words: [String]) {
        #expect(HookCommand(parsing: text)?.arguments == words)
    }

    @Test(arguments: ["", "   ", "'unclosed", "trailing\\", "'' x"])
    func brokenOrEmptyCommandsAreRefused(text: String) {
        #expect(HookCommand(parsing: text) == nil)
    }

    @Test func configKeysAndRemoteOverrides() throws {
        let config = try DaemonConfig.parse(
            """
            [daemon]
            on_complete = notify-send done
            on_failure = logger -t uploadd failed
            hook_timeout = 5
            notify = all
            [remote nas]
            url = file:///srv/
            on_complete = /usr/local/bin/index-photos
            """)
        #expect(config.hooks.onComplete?.arguments == ["notify-send", "done"])
        #expect(config.hooks.onFailure?.arguments == ["logger", "-t", "uploadd", "failed"])
        #expect(config.hooks.timeout == .seconds(5))
        #expect(config.notify == .all)
        #expect(config.remotes["nas"]?.onComplete?.arguments == ["/usr/local/bin/index-photos"])
        #expect(DaemonConfig().notify == .all)

        var job = Job(id: JobID(1), spec: JobSpec(source: "/a", destination: "nas:x/"), createdAt: Date())
        job.state = .completed
        #expect(HookRun.command(for: job, config: config)?.arguments == ["/usr/local/bin/index-photos"])
        job.state = .failed
        #expect(HookRun.command(for: job, config: config)?.arguments.first == "logger")
        job.state = .canceled
        #expect(HookRun.command(for: job, config: config) == nil)
    }

    @Test func aMistypedKeyGetsAHint() throws {
        let config = try DaemonConfig.parse("[daemon]\non_complet = x\n[remote r]\nurl = file:///x/\nuser_name = a\n")
        #expect(
            config.warnings.contains("line 2: unknown key 'on_complet' in [daemon] ignored (did you mean on_complete?)")
        )
        #expect(config.warnings.contains { $0.hasPrefix("line 5: unknown key 'user_name' in [remote r] ignored") })
    }

    @Test func oneMessagePerBatch() {
        func job(_ id: UInt64, _ state: JobState, error: String? = nil) -> Job {
            var job = Job(
                id: JobID(id), spec: JobSpec(source: "/p/IMG_\(id).jpg", destination: "nas:2026/"), createdAt: Date())
            job.state = state
            job.error = error.map { JobError(code: "http", message: $0) }
            return job
        }
        let done = BatchAnnouncements.text(
            batch: JobID(1), completed: [job(1, .completed), job(2, .completed)], failed: [])
        #expect(done == ("Uploaded 2 files", "to nas:2026/"))
        let one = BatchAnnouncements.text(batch: JobID(1), completed: [job(1, .completed)], failed: [])
        #expect(one.summary == "Uploaded IMG_1.jpg")
        let mixed = BatchAnnouncements.text(
            batch: JobID(1), completed: [job(1, .completed)], failed: [job(2, .failed, error: "HTTP 401")])
        #expect(mixed.summary == "1 of 2 files failed to upload")
        #expect(mixed.body == "IMG_2.jpg: HTTP 401\nuploadctl list --batch 1 --state failed")
    }

    @Test func hooksFindTheirProgramOnPath() {
        func resolved(_ line: String, _ path: String) -> String? {
            HookCommand(parsing: line)?.executable(searchPath: path)
        }
        #expect(resolved("sh -c 'true'", "/nonexistent:/bin") == "/bin/sh")
        #expect(resolved("./x", "/bin") == "./x")
        #expect(resolved("no-such-program", "/bin") == "no-such-program")
    }

    @Test(arguments: [
        ("https://files.example/a%20b.jpg?x=1#f", nil), ("HTTP://[::1]:8080/x", nil),
        ("http://h/a\nEVIL=1", "it holds control characters"), ("http://h/\u{1b}[2J", "it holds control characters"),
        ("http://h/\u{9b}31m", "it holds control characters"), ("file:///etc/passwd", "it is not an http or https URL"),
        ("javascript:alert(1)", "it is not an http or https URL"),
        ("http://h/a b", "it holds a space, which a URL cannot"),
        ("http://h/\u{202e}gpj.exe", "it holds U+202E, which a URL cannot"), ("http:///x", "it names no host"),
    ])
    func aHookGetsOnlyAWellFormedHTTPURL(url: String, refusal: String?) {
        #expect(HookURL.refusal(of: url) == refusal)
    }

    /// The markup notification servers read in a body is shown as text.
    @Test func notificationTextIsEscapedForMarkup() {
        #expect(
            DesktopNotifier.markupEscaped("a <b>&</b> <img src=\"file:///x\">")
                == "a &lt;b&gt;&amp;&lt;/b&gt; &lt;img src=\"file:///x\"&gt;")
        #expect(DesktopNotifier.markupEscaped("plain") == "plain")
    }
}
