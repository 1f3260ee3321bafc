import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// `uploadctl add` as people and scripts use it, against a real daemon.
@Suite(.serialized)
final class AddCommandTests {
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        daemon = try DaemonProcess(name: "add-command")
        files = try TestPaths.scratch("add-command-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    /// A `Content-Length: 0` of the user's sent a body the server did not read; `Host` sent the
    /// credentials to another virtual host. uploadctl refuses them, and so does the daemon for a
    /// client that skips uploadctl's checks.
    @Test(arguments: ["Content-Length: 0", "Transfer-Encoding: chunked", "host: other.example", "Expect: 100-continue"])
    func headersThatFrameTheRequestAreRefusedAtAdd(header: String) throws {
        let source = files.appendingPathComponent("framing.txt").path
        try "framing\n".write(toFile: source, atomically: true, encoding: .utf8)
        let out = files.appendingPathComponent("framing-out").path
        let result = try daemon.ctl(["add", source, "--to", "file://\(out)/", "--header", header])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("cannot be set: uploadd"), "\(result)")
        let raw = try RawClient(daemon.socket)
        let params = try JSONSerialization.data(withJSONObject: [
            "source": source, "destination": "file://\(out)/", "headers": [header],
        ])
        raw.send(
            line:
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"job.add\",\"params\":\(String(decoding: params, as: UTF8.self))}"
        )
        let answer = raw.readLine()
        guard case .line(let bytes) = answer else {
            Issue.record("no answer: \(answer)")
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("\"error\"") && text.contains("cannot be set"), "\(text)")
    }

    /// `add --json --wait` reports the files it could not add, as `add --json` does.
    @Test func jsonWaitReportsTheRefusedFiles() throws {
        let good = files.appendingPathComponent("good.txt").path
        try "good\n".write(toFile: good, atomically: false, encoding: .utf8)
        let missing = files.appendingPathComponent("missing.txt").path
        let out = files.appendingPathComponent("out").path
        let result = try daemon.ctl(["--json", "add", good, missing, "--to", "file://\(out)/", "--wait"])
        #expect(result.status == 1, "\(result)")
        let output = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let jobs = try #require(output["jobs"] as? [[String: Any]])
        #expect(jobs.count == 1)
        #expect(jobs.first?["state"] as? String == "completed")
        let errors = try #require(output["errors"] as? [[String: Any]], "\(result)")
        #expect(errors.count == 1)
        #expect(errors.first?["source"] as? String == missing)
        #expect((errors.first?["message"] as? String)?.contains("does not exist") == true)
    }

    /// `add f1 … f6`: IDs ascend in the order given, and at equal priority the jobs start in it.
    @Test func filesAreQueuedAndStartedInTheOrderGiven() throws {
        var paths: [String] = []
        for index in 1...6 {
            let path = files.appendingPathComponent("f\(index).txt").path
            try "file \(index)\n".write(toFile: path, atomically: false, encoding: .utf8)
            paths.append(path)
        }
        let ids = try daemon.add(paths, to: "file://\(files.path)/ordered/")
        #expect(ids == ids.sorted() && Set(ids).count == 6, "\(ids)")
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $1.rawValue == $0.rawValue + 1 }, "consecutive: \(ids)")
        var starts: [Date] = []
        for (id, path) in zip(ids, paths) {
            let job = try daemon.waitFor(id)
            #expect(job.state == .completed)
            #expect(job.source == path)
            starts.append(try #require(job.history?.first { $0.message.hasPrefix("attempt 1 started") }?.at))
        }
        #expect(starts == starts.sorted(), "started out of order: \(starts)")
        // The add of six is a line or two at info (uploadctl sends the first file on its own),
        // not one each: each job's own is at debug. Each end has its own line.
        let infoLines = daemon.logLines(containing: files.path).filter {
            $0.contains("added") && !$0.contains("debug:")
        }
        #expect((1...2).contains(infoLines.count), "\(infoLines)")
        #expect(infoLines.contains { $0.contains("jobs (") && $0.contains("to \(ids[5])): ") }, "\(infoLines)")
        #expect(daemon.logLines(containing: "debug: job \(ids[3]): added: \(paths[3])").count == 1)
        #expect(daemon.logLines(containing: "completed: \(paths[3])").count == 1)
    }

    /// An add of 800 files goes in several requests, two in flight at a time (`JobQueuer`), each
    /// checked and copied while the one before syncs: the IDs still follow the order given, one
    /// after another, and each job has its file (requests' first and last files checked).
    @Test func aLongAddInRequestsInFlightKeepsTheOrderGiven() throws {
        let folder = files.appendingPathComponent("in-flight")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let paths = try (0..<800).map { index in
            let path = folder.appendingPathComponent(String(format: "p%03d.txt", index)).path
            try "file \(index)\n".write(toFile: path, atomically: false, encoding: .utf8)
            return path
        }
        let ids = try daemon.add(paths, to: "file://\(files.path)/in-flight-out/")
        #expect(ids.count == 800)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $1.rawValue == $0.rawValue + 1 }, "consecutive: \(ids)")
        for index in [0, 1, 50, 51, 250, 251, 750, 751, 799] {
            let job = try daemon.waitFor(ids[index])
            #expect(job.state == .completed)
            #expect(job.source == paths[index])
        }
    }

    /// 1,000 small files ending at once do not write 1,000 lines (journald stops taking a service's
    /// lines past its rate limit): at most 100 a second one by one, and a line that counts the
    /// rest. Together they account for every job.
    @Test func manyEndsAtOnceAreSummedUpPastAHundredLinesASecond() throws {
        let folder = files.appendingPathComponent("many-ends")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let paths = try (1...1_000).map { index in
            let path = folder.appendingPathComponent("e\(index).txt").path
            try "end \(index)\n".write(toFile: path, atomically: false, encoding: .utf8)
            return path
        }
        let result = try daemon.ctl(["add"] + paths + ["--to", "file://\(files.path)/many-ends-out/", "--wait"])
        #expect(result.status == 0, "\(result)")

        func accounted() -> (one: Int, summed: Int, summaries: [String]) {
            let one = daemon.logLines(containing: "completed: \(folder.path)/").count
            let summaries = daemon.logLines(containing: "in that second, not written one by one")
            let summed = summaries.compactMap { line -> Int? in
                guard let range = line.range(of: #"(\d+) completed"#, options: .regularExpression) else { return nil }
                return Int(line[range].split(separator: " ")[0])
            }.reduce(0, +)
            return (one, summed, summaries)
        }
        // The last summary comes once its second is over.
        #expect(eventually(timeout: 10) { accounted().one + accounted().summed == 1_000 }, "\(accounted())")
        let (one, _, summaries) = accounted()
        #expect(one < 1_000 && !summaries.isEmpty, "\(one) lines one by one, summaries: \(summaries)")
        #expect(summaries.allSatisfy { $0.contains("not written one by one (over 100 a second)") }, "\(summaries)")
    }

    func write(_ name: String, _ text: String = "content\n") throws -> String {
        let path = files.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    /// Every destination mistake a check can find is found at `add`, as a usage error (64) that
    /// says what to write instead, and nothing is queued.
    @Test(arguments: [
        (["--to", "htp://example.org/"], "uploadd does not upload to htp:// URLs; use http(s)://"),
        (["--to", "ftp://example.org/dir/"], "uploadd does not upload to ftp:// URLs"),
        (["--to", "nas:photos/"], "no remote named 'nas'"),
        (["--to", "x"], "no scheme"),
        (["--to", "http://127.0.0.1:1/dir/#frag"], "a fragment (#...) is never sent"),
        (["--to", "file:///tmp/dir/?x=1"], "takes no query"),
        (["--to", "http://127.0.0.1:1/dir/", "--protocol", "s3"], "protocol s3 uploads to s3://"),
        (["--to", "http://127.0.0.1:1/dir/", "--chunk-size", "0"], "is not a chunk size"),
    ])
    func badDestinationsAreUsageErrorsAtAdd(arguments: [String], message: String) throws {
        let source = try write("bad-destination.txt")
        let before = try daemon.ctlJSON(JobList.self, ["list"]).jobs.count
        let result = try daemon.ctl(["add", source] + arguments)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains(message), "\(result)")
        #expect(!result.stderr.contains("invalid params"), "worded for people: \(result)")
        #expect(try daemon.ctlJSON(JobList.self, ["list"]).jobs.count == before, "nothing was queued")
    }

    @Test func aNameThatCannotGoToAServerNeedsTheDestinationToNameTheFile() throws {
        let servers = try TestServers.load()
        let source = try write("new\nline.txt", "odd name\n")
        let refused = try daemon.ctl(["add", source, "--to", "\(servers.nginxURL)/dav/names/"])
        #expect(refused.status == 64, "\(refused)")
        #expect(refused.stderr.contains("name the file in the destination"), "\(refused)")
        let ids = try daemon.add([source], to: "\(servers.nginxURL)/dav/names/explicit.txt", ["--protocol", "put"])
        #expect(try daemon.waitFor(ids[0]).state == .completed)
        #expect(
            try String(contentsOfFile: "\(servers.nginxRoot)/dav/names/explicit.txt", encoding: .utf8) == "odd name\n")
        // Shown escaped, in one row, as ls and git show such names; --json keeps the name as it is.
        let list = try daemon.ctl(["list"]).stdout
        #expect(list.contains("new\\nline.txt"), "\(list)")
        #expect(!list.contains("new\nline"), "a row was split: \(list)")
        let json = try daemon.ctlJSON(JobInfo.self, ["show", "\(ids[0])"])
        #expect(json.source.hasSuffix("new\nline.txt"))
    }

    /// A trailing slash then a query (a presigned URL): the name goes on the path, the query stays.
    /// Spaces are encoded.
    @Test func aQueryOrASpaceInTheDestinationIsKeptRight() throws {
        let servers = try TestServers.load()
        let source = try write("presigned.txt", "signed\n")
        let ids = try daemon.add([source], to: "\(servers.nginxURL)/dav/q/?token=abc&x=1", ["--protocol", "put"])
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(
            job.result?.url?.contains("/dav/q/presigned.txt?") == true,
            "the query stays after the name: \(String(describing: job.result))")
        #expect(FileManager.default.fileExists(atPath: "\(servers.nginxRoot)/dav/q/presigned.txt"))
        let spaced = try daemon.add([source], to: "\(servers.nginxURL)/dav/my dir/", ["--protocol", "put"])
        #expect(try daemon.waitFor(spaced[0]).state == .completed)
        #expect(FileManager.default.fileExists(atPath: "\(servers.nginxRoot)/dav/my dir/presigned.txt"))
    }

    /// `file://` copies get the modes `cp` would give them under the umask of the uploadctl that added them.
    @Test func fileCopiesFollowTheUmaskOfTheAdder() throws {
        let source = try write("modes.txt")
        let out = files.appendingPathComponent("modes-\(UUID().uuidString.prefix(6))/nested").path
        let uploadctl = TestPaths.binaries.appendingPathComponent("uploadctl").path
        let result = try Command.run(
            "/bin/sh",
            [
                "-c", "umask 027; exec \"$0\" --socket \"$1\" add \"$2\" --to \"$3\" --wait", uploadctl, daemon.socket,
                source, "file://\(out)/",
            ])
        #expect(result.status == 0, "\(result)")
        func mode(_ path: String) -> mode_t {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
        }
        #expect(mode(out + "/modes.txt") == 0o640)
        #expect(mode(out) == 0o750)
    }

    /// `pause 4 2 99`: the job that can be paused is, and each other one is named with its reason.
    @Test func severalIDsActOnEachAndReportEachFailure() throws {
        let done = try daemon.add([try write("done.txt")], to: "file://\(files.path)/several/")[0]
        #expect(try daemon.waitFor(done).state == .completed)
        // Nothing listens on port 1: the job waits for its retries, queued.
        let waiting = try daemon.add([try write("waiting.txt")], to: "http://127.0.0.1:1/up/", ["--protocol", "put"])[0]
        let result = try daemon.ctl(["pause", "\(waiting)", "\(done)", "99999"])
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout == "\(waiting) paused\n", "\(result)")
        // Each named once (issue 49): "uploadctl: job 1 is completed", not "job 1: job 1 is …".
        #expect(result.stderr.contains("uploadctl: job \(done) is completed: cannot pause it"), "\(result)")
        #expect(result.stderr.contains("uploadctl: no job 99999"), "\(result)")
        #expect(!result.stderr.contains("job \(done): job \(done)"), "\(result)")
        #expect(try daemon.job(waiting).state == .paused)
        // Paused twice: nothing changes, nothing is logged again.
        #expect(try daemon.ctl(["pause", "\(waiting)"]).status == 0)
        #expect(daemon.logLines(containing: "job \(waiting): paused").count == 1, "\(daemon.log(tail: 20))")
        _ = try daemon.ctl(["cancel", "\(waiting)"])
    }

    /// `resume --all` resumes failed jobs too, as its help says.
    @Test func resumeAllCoversFailedJobs() throws {
        let servers = try TestServers.load()
        let denied = try daemon.add(
            [try write("denied.txt")], to: "\(servers.nginxURL)/private/", ["--protocol", "put"])[0]
        #expect(try daemon.waitFor(denied).state == .failed)
        let result = try daemon.ctl(["resume", "--all"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("\(denied) resumed"), "\(result)")
        #expect(try daemon.job(denied).attempts >= 1)
        #expect(eventually(timeout: 20) { (try? self.daemon.job(denied))?.attempts == 2 }, "it ran again")
    }

    /// `delete` of a job that never uploaded anything says there was nothing on the server.
    @Test func deleteOfAJobThatNeverUploadedSaysSo() throws {
        let id = try daemon.add([try write("never.txt")], to: "http://127.0.0.1:1/up/", ["--protocol", "put"])[0]
        _ = try daemon.ctl(["cancel", "\(id)"])
        let result = try daemon.ctl(["delete", "\(id)"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("\(id) removed (it had not uploaded anything"), "\(result)")
    }

    /// A server that cannot be reached is not taken for one that speaks put: the probe runs again.
    @Test func anUnreachableServerDecidesNoProtocol() throws {
        let id = try daemon.add([try write("probe.txt")], to: "http://127.0.0.1:1/up/")[0]
        #expect(
            eventually(timeout: 20) {
                ((try? self.daemon.job(id))?.attempts ?? 0) >= 1 && (try? self.daemon.job(id))?.error != nil
            })
        let job = try daemon.job(id)
        #expect(job.protocol == .auto, "\(job)")
        #expect(
            !(job.history ?? []).contains { $0.message.contains("put") && $0.message.contains("server") },
            "\(String(describing: job.history))")
        _ = try daemon.ctl(["cancel", "\(id)"])
    }

    /// `wait` on a paused job says it is paused, and `show` words --snapshot none as the option does.
    @Test func waitSaysAJobIsPausedAndShowSaysNone() throws {
        let id = try daemon.add(
            [try write("paused.txt")], to: "http://127.0.0.1:1/up/", ["--protocol", "put", "--snapshot", "none"])[0]
        #expect(try daemon.ctl(["pause", "\(id)"]).status == 0)
        let wait = try daemon.ctl(["wait", "\(id)", "--timeout", "1"])
        #expect(wait.status == 1)
        #expect(
            wait.stderr.contains("job \(id) is paused and will not end by itself: uploadctl resume \(id)"), "\(wait)")
        let show = try daemon.ctl(["show", "\(id)"]).stdout
        #expect(show.contains("snapshot: none (the original file"), "\(show)")
        _ = try daemon.ctl(["cancel", "\(id)"])
    }

    @Test func jsonShowOfAnUnknownJobPrintsAnErrorObject() throws {
        let result = try daemon.ctl(["--json", "show", "99999"])
        #expect(result.status == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["code"] as? Int == RPCError.jobNotFoundCode)
        #expect((error["message"] as? String)?.contains("no job 99999") == true)
    }
}
