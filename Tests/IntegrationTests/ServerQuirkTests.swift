import Foundation
import Testing
import UploadCore
import UploadWire

/// Issue 48, servers as users have them: tus servers whose request bodies are capped below
/// uploadd's 8 MiB chunks (django-tus under Django's defaults, a stock nginx in front of
/// tuspyserver), and S3 servers without ListParts or that split Authorization on ", " (the
/// scripted server's S3 scenarios).
@Suite(.serialized)
final class ServerQuirkTests {
    let daemon: DaemonProcess
    let files: URL
    let scripted: ScriptedServer
    /// A fresh name part for each test: the scripted S3 fails part 2 once per key.
    let run = "q\(UUID().uuidString.prefix(8).lowercased())"

    init() throws {
        scripted = try ScriptedServer.load()
        files = try TestPaths.scratch("quirk-files")
        let secret = files.appendingPathComponent("s3-secret").path
        try "scripted-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        var config = "[daemon]\ntransfers = 1\nretry_base_delay = 100\nretry_max_delay = 1\n\n"
        for bucket in ["s3-comma-space", "s3-listparts-501", "s3-listparts-500", "s3-listparts-404"] {
            config += """
                [remote \(bucket)]
                protocol = s3
                url = s3://\(bucket)/
                endpoint = \(scripted.url)
                region = us-east-1
                access_key_id = SCRIPTED
                secret_access_key_file = \(secret)
                multipart_threshold = 1M

                """
        }
        daemon = try DaemonProcess(name: "quirks", config: config)
        try daemon.start()
    }

    deinit { daemon.stop() }

    func file(_ name: String, size: Int) throws -> String {
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: size)
        return path
    }

    func history(_ job: JobInfo) -> [String] { job.history?.map(\.message) ?? [] }

    /// The Authorization header's fields are joined by ", " as the SDKs write them: a server that
    /// splits on ", " takes it (before: 400 AuthorizationHeaderMalformed, blamed on the region).
    @Test func anS3ServerThatSplitsAuthorizationOnCommaSpaceTakesTheUpload() throws {
        let single = try file("\(run)-single.bin", size: 100_000)
        let parts = try file("\(run)-parts.bin", size: 6 << 20)
        let ids = try daemon.add([single, parts], to: "s3-comma-space:", ["--chunk-size", "5M"])
        for (id, path) in zip(ids, [single, parts]) {
            let job = try daemon.waitFor(id, timeout: 60)
            #expect(job.state == .completed, "\(String(describing: job.error))")
            let name = (path as NSString).lastPathComponent
            #expect(try Command.sha256(scripted.stored("s3-comma-space", name)) == Command.sha256(path))
        }
    }

    /// After a failed part, the next attempt asks ListParts, which this server does not have (501,
    /// 500 each time, a plain 404): the upload is aborted and begun again, not retried for a day.
    @Test(arguments: ["s3-listparts-501", "s3-listparts-500", "s3-listparts-404"])
    func anS3ServerWithoutListPartsGetsANewMultipartUpload(bucket: String) throws {
        let path = try file("\(run)-\(bucket).bin", size: 12 << 20)
        let ids = try daemon.add([path], to: "\(bucket):", ["--chunk-size", "5M"])
        let job = try daemon.waitFor(ids[0], timeout: 60)
        #expect(job.state == .completed, "\(String(describing: job.error))\n\(history(job))")
        #expect(job.attempts == 2, "part 2 failed once, then one attempt started over")
        #expect(
            history(job).contains { $0.contains("does not list the parts of an S3 upload") }, "\(history(job))")
        let name = (path as NSString).lastPathComponent
        #expect(try Command.sha256(scripted.stored(bucket, name)) == Command.sha256(path))
    }

    /// The chunk (8 MiB by default) is larger than the server takes: halved until it goes
    /// through, the upload completes, and the history says which --chunk-size to set.
    @Test(arguments: [
        // Django takes up to 2.5 MiB, nginx up to 1 MiB (client_max_body_size 1m).
        ("django-tus", 400, ["8 MiB", "4 MiB"]), ("nginx-tus-proxy", 413, ["8 MiB", "4 MiB", "2 MiB"]),
    ])
    func aTusServerThatRefusesLargeChunksGetsSmallerOnes(server name: String, status: Int, refused: [String]) throws {
        let server = try ServerMatrix.load().server(name)
        let path = try file("\(run)-\(name).bin", size: 10 << 20)
        let ids = try daemon.add([path], to: server.url, ["--protocol", "tus"])
        let job = try daemon.waitFor(ids[0], timeout: 120)
        #expect(job.state == .completed, "\(String(describing: job.error))\n\(history(job))")
        #expect(job.attempts == 1, "no attempt failed")
        let lines = history(job)
        for size in refused {
            #expect(
                lines.contains { $0.hasPrefix("the server refused a chunk of \(size) (HTTP \(status)); trying") },
                "\(lines)")
        }
        #expect(lines.contains { $0.contains("set --chunk-size") }, "\(lines)")
        // Where the bytes landed: django-tus names the file STEM.0001.EXT, tuspyserver the upload ID.
        let root = try #require(server.root)
        if name == "django-tus" {
            // django-tus 0.5.0 opens the file with "wb" for each chunk (tusfile.py _write_file),
            // truncating what earlier chunks wrote: only the last chunk survives, at its offset.
            // That is the server's bug; the size and the last chunk (2 MiB) are what can be checked.
            let stored = "\(root)/\(run)-\(name).0001.bin"
            let tail = 2 << 20
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            let landed = try Data(contentsOf: URL(fileURLWithPath: stored))
            #expect(landed.count == original.count)
            #expect(landed.suffix(tail) == original.suffix(tail))
        } else {
            let stored = "\(root)/\((try #require(job.result?.url) as NSString).lastPathComponent)"
            #expect(try Command.sha256(stored) == Command.sha256(path))
        }

        // The next upload there starts with the size that worked.
        let second = try file("\(run)-\(name)-2.bin", size: 3 << 20)
        let next = try daemon.waitFor(try daemon.add([second], to: server.url, ["--protocol", "tus"])[0], timeout: 60)
        #expect(next.state == .completed, "\(String(describing: next.error))")
        #expect(!history(next).contains { $0.hasPrefix("the server refused") }, "\(history(next))")
        #expect(history(next).contains { $0.hasPrefix("sending chunks of") }, "\(history(next))")
    }
}
