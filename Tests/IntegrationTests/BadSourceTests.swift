import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Source files that are not what an upload expects: devices, files swapped or changed under a
/// job, and a sparse file past 4 GiB. Each gets a clear message naming the file, and never a hang,
/// an endless read, or a mixed file on the server.
@Suite(.serialized)
final class BadSourceTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL
    private var mounts: [TmpfsMount] = []

    init() throws {
        servers = try TestServers.load()
        // One transfer at 1 MiB/s: a 4 MiB PUT lasts about 4 s, long enough to change its file
        // mid-way, and jobs added behind it wait in the queue.
        daemon = try DaemonProcess(name: "bad-sources", config: "[daemon]\ntransfers = 1\nrate_limit = 1M\n")
        files = try TestPaths.scratch("bad-source-files")
        try daemon.start()
    }

    deinit {
        daemon.stop()
        for mount in mounts { mount.unmount() }
        try? FileManager.default.removeItem(at: files)
    }

    private func file(_ name: String, size: Int) throws -> String {
        let path = files.appendingPathComponent(name).path
        try CrashSupport.randomFile(at: path, size: size)
        return path
    }

    /// /dev/zero would never end and /dev/null is empty: `add` refuses devices at once, in every
    /// snapshot mode and behind a symlink, naming the path the user gave.
    @Test func aDeviceIsRefusedAtAddWithoutBeingRead() throws {
        let link = files.appendingPathComponent("looks-like-a-file.bin").path
        #expect(symlink("/dev/zero", link) == 0)
        let out = files.appendingPathComponent("out").path
        for path in ["/dev/zero", "/dev/null", "/dev/urandom", link] {
            for mode in SnapshotMode.allCases {
                let started = Date()
                let result = try daemon.ctl(
                    ["add", path, "--to", "file://\(out)/", "--snapshot", mode.rawValue], timeout: 20)
                #expect(
                    Date().timeIntervalSince(started) < 5,
                    "\(path) with --snapshot \(mode.rawValue) is answered at once")
                #expect(result.status == 1, "\(path) with --snapshot \(mode.rawValue): \(result)")
                #expect(result.stderr.contains("\(path) is a device; only regular files can be uploaded"), "\(result)")
            }
        }
        let json = try daemon.ctl(["--json", "add", "/dev/zero", "--to", "file://\(out)/"])
        let output = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any] ?? [:]
        #expect((output["errors"] as? [[String: Any]])?.first?["code"] as? Int == RPCError.sourceErrorCode, "\(json)")
        #expect(try daemon.ctlJSON(JobList.self, ["list"]).jobs.isEmpty, "nothing was queued")
        #expect(!FileManager.default.fileExists(atPath: out), "nothing was written")
    }

    /// With `--snapshot none` the file is opened only when the job runs. Swapped for a FIFO
    /// (whose open would block) or a symlink to /dev/zero (which never ends), the job fails at
    /// once, naming the file, instead of hanging the daemon or uploading endless zeros.
    @Test func aFileSwappedForAFIFOOrADeviceAfterAddFailsItsJobWithoutHanging() throws {
        let blocker = try daemon.add(
            [try file("blocker.bin", size: 4 << 20)], to: "\(servers.nginxURL)/dav/bad-source-blockers/",
            ["--protocol", "put"])[0]
        _ = try daemon.waitFor(blocker, state: .running, timeout: 10)
        let fifo = try file("becomes-a-fifo.bin", size: 10_000)
        let device = try file("becomes-a-device.bin", size: 10_000)
        let out = files.appendingPathComponent("out").path
        let ids = try daemon.add([fifo, device], to: "file://\(out)/", ["--snapshot", "none"])
        #expect(try daemon.ctl(["pause"] + ids.map(\.description)).status == 0, "still queued behind the blocker")
        #expect(try daemon.ctl(["cancel", "\(blocker)"]).status == 0)

        #expect(unlink(fifo) == 0 && mkfifo(fifo, 0o600) == 0)
        #expect(unlink(device) == 0 && symlink("/dev/zero", device) == 0)
        #expect(try daemon.ctl(["resume"] + ids.map(\.description)).status == 0)
        for (id, path) in zip(ids, [fifo, device]) {
            let job = try daemon.waitFor(id, timeout: 15)
            #expect(job.state == .failed, "job \(id) for \(path)")
            #expect(job.error?.code == "source")
            #expect(
                job.error?.message.contains("\(path) changed since it was added") == true,
                "\(String(describing: job.error))")
            #expect(job.attempts == 1, "a changed file is not retried")
        }
        let written = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
        #expect(written.isEmpty, "nothing reached the destination: \(written)")
        #expect(try daemon.ctl(["status"]).status == 0, "the daemon still serves")
    }

    /// A file rewritten in place (same size, so only its modification time tells) while it is
    /// being PUT: the job fails naming the file, and the server never gets the whole body, so it
    /// does not store a mix of old and new bytes that looks complete.
    @Test func aFileChangedWhileUploadingFailsItsJobAndNeverReachesTheServerWhole() throws {
        let size = 4 << 20
        let path = try file("changing.bin", size: size)
        let folder = "bad-source-changed-\(UUID().uuidString.prefix(6))"
        let stored = "\(servers.nginxRoot)/dav/\(folder)/changing.bin"
        let id = try daemon.add(
            [path], to: "\(servers.nginxURL)/dav/\(folder)/", ["--protocol", "put", "--snapshot", "none"])[0]
        #expect(
            eventually(timeout: 10) { ((try? daemon.job(id))?.bytesSent ?? 0) >= 256 << 10 }, "the upload is under way")
        let before = try daemon.job(id)
        // New bytes in the last 64 KiB, which the upload has not read yet (libcurl reads 2 MiB ahead).
        #expect(
            before.state == .running && before.bytesSent <= Int64(size - (64 << 10)), "read so far: \(before.bytesSent)"
        )
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: UInt64(size - (64 << 10)))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 64 << 10))
        try handle.close()

        let job = try daemon.waitFor(id, timeout: 20)
        #expect(job.state == .failed, "\(job.state): \(String(describing: job.error))")
        #expect(job.error?.code == "source")
        #expect(
            job.error?.message.contains("\(path) changed since it was added") == true,
            "\(String(describing: job.error))")
        #expect(job.attempts == 1, "a changed file is not retried")
        usleep(300_000)
        #expect(
            !FileManager.default.fileExists(atPath: stored), "the server stored a file that mixes old and new bytes")
    }

    /// /dev/fd/N, /dev/stdin and /proc/self/fd/N name an open file of whichever process reads
    /// them: uploadd read its own (`add /dev/fd/5` uploaded its lock file), never the client's,
    /// and said "does not exist" of `add <(command)`'s /dev/fd/63. Refused at add, saying what to
    /// do, whether the daemon has that descriptor or not, and through a link of the user's too.
    /// Asked on the socket, so that the daemon's answer is what is checked, not uploadctl's.
    @Test func aPathThatNamesAnOpenFileIsRefusedAtAdd() throws {
        let out = files.appendingPathComponent("descriptor-out").path
        let link = files.appendingPathComponent("link-to-a-descriptor").path
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/proc/self/fd/3")
        for path in ["/dev/fd/3", "/dev/fd/63", "/dev/stdin", "/proc/self/fd/3", "/proc/self/fd/63", link] {
            let request = try JSONSerialization.data(withJSONObject: [
                "jsonrpc": "2.0", "id": 1, "method": "job.add",
                "params": ["source": path, "destination": "file://\(out)/"],
            ])
            let answer = try CrashSupport.rpc(socket: daemon.socket, String(decoding: request, as: UTF8.self))
            #expect(answer.contains("names a file of whichever process reads it"), "\(path): \(answer)")
            #expect(answer.contains("write it to a file first"), "\(path): \(answer)")
        }
        #expect(try daemon.ctlJSON(JobList.self, ["list"]).jobs.isEmpty, "nothing was queued")
        #expect(!FileManager.default.fileExists(atPath: out), "nothing was written")
    }

    /// Files whose size is not their length (issue 47, finding 4): a sysfs file says 4,096 bytes
    /// and holds 23, a procfs file says 0. Refused at add in every snapshot mode, saying what to
    /// do; uploadd once sent the 23 bytes and then zeros, or nothing, and called it completed.
    @Test func aFileTheKernelMakesAsItIsReadIsRefusedAtAdd() throws {
        let out = files.appendingPathComponent("pseudo-out").path
        for path in ["/sys/kernel/mm/transparent_hugepage/enabled", "/proc/self/status", "/proc/cpuinfo"]
        where FileManager.default.isReadableFile(atPath: path) {
            for mode in SnapshotMode.allCases {
                let result = try daemon.ctl(
                    ["add", path, "--to", "file://\(out)/", "--snapshot", mode.rawValue], timeout: 20)
                #expect(result.status == 1, "\(path) with --snapshot \(mode.rawValue): \(result)")
                #expect(result.stderr.contains("copy it first (cat \(path) > FILE)"), "\(result)")
            }
        }
        #expect(try daemon.ctlJSON(JobList.self, ["list"]).jobs.isEmpty, "nothing was queued")
        #expect(!FileManager.default.fileExists(atPath: out), "nothing was written")
    }

    /// A 31 MiB file cut to 1 MiB while its add copies it (issue 47, finding 4: the copy, its room
    /// taken ahead, was uploaded whole with a tail of zeros and called completed). Cut at a
    /// different moment each round: before the check, during the copy, or after it. Whatever the
    /// moment, what arrives is the file as it was, or as it was cut, or nothing with a reason.
    @Test func aSourceCutShortWhileItIsCopiedIsNeverUploadedWithZeros() throws {
        let local = try DaemonProcess(name: "cut-short")
        try local.start()
        defer { local.stop() }
        let size = 31 << 20
        let cut = 1 << 20
        var refusedDuringCopy = 0
        for round in 0..<10 {
            let path = try file("cut-\(round).bin", size: size)
            let whole = try Data(contentsOf: URL(fileURLWithPath: path))
            let out = files.appendingPathComponent("cut-out-\(round)").path
            let cutter = DispatchGroup()
            DispatchQueue.global().async(group: cutter) {
                usleep(UInt32(round * 4_000))
                truncate(path, off_t(cut))
            }
            let result = try local.ctl(
                ["add", path, "--to", "file://\(out)/", "--snapshot", "copy", "--wait"], timeout: 60)
            cutter.wait()
            let arrived = try? Data(contentsOf: URL(fileURLWithPath: out + "/cut-\(round).bin"))
            if result.status == 0 {
                #expect(
                    arrived == whole || arrived == whole.prefix(cut),
                    "round \(round): \(arrived?.count ?? -1) bytes arrived, neither the file nor its first MiB")
            } else {
                #expect(arrived == nil, "round \(round): a refused add uploaded \(arrived?.count ?? 0) bytes")
                #expect(
                    result.stderr.contains("ended after") || result.stderr.contains("changed while it was copied"),
                    "round \(round): \(result)")
                refusedDuringCopy += 1
            }
            try? FileManager.default.removeItem(atPath: path)
        }
        print("rounds whose cut came during the copy: \(refusedDuringCopy) of 10")
    }

    /// A sparse file past 4 GiB (so no size or offset may be 32 bits anywhere), with bytes on both
    /// sides of the 4 GiB line, uploaded with `--snapshot none` to a `file://` destination. Both
    /// are on tmpfs, so the holes cost nothing and the copy (memory) goes away with its mount; two
    /// mounts, because within one tmpfs copy_file_range is several times slower than read and write.
    @Test(.mountsTmpfs)
    func aSparseFileLargerThan4GiBArrivesIntact() throws {
        try TmpfsMount.requirePermitted()
        let size: Int64 = (1 << 32) + (1 << 20) + 17
        let sources = try TmpfsMount(at: files.appendingPathComponent("sparse-source").path, size: "16m")
        let destinations = try TmpfsMount(
            at: files.appendingPathComponent("sparse-destination").path, size: "\(size >> 20 + 64)m")
        mounts += [sources, destinations]
        let source = sources.path + "/sparse.bin"
        try BigFiles.sparse(
            at: source, size: size,
            pieces: [
                (0, Array("start".utf8)), ((1 << 32) - 7, Array("across the 4 GiB line".utf8)),
                ((1 << 32) + 12345, Array("past 4 GiB".utf8)), (size - 4, Array("end!".utf8)),
            ])
        let sourceHash = BigFiles.sha256InBackground(source)  // while the daemon copies
        let id = try daemon.add([source], to: "file://\(destinations.path)/out/", ["--snapshot", "none"])[0]
        let job = try daemon.waitFor(id, timeout: 120)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.bytesTotal == size)
        #expect(job.bytesAcked == size)

        let stored = destinations.path + "/out/sparse.bin"
        defer { unlink(stored) }
        var info = stat()
        #expect(stat(stored, &info) == 0)
        #expect(Int64(info.st_size) == size)
        #expect(try BigFiles.sha256(stored) == sourceHash(), "the copy differs from the sparse source")
    }
}
