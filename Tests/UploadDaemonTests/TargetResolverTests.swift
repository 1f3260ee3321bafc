import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

@Suite("TargetResolver: destinations against the config")
struct TargetResolverTests {
    static func job(
        _ destination: String, source: String = "/data/a.bin", protocol uploadProtocol: UploadProtocol = .auto,
        user: String? = nil
    )
        -> Job
    {
        Job(
            id: JobID(1),
            spec: JobSpec(
                source: source, destination: destination, uploadProtocol: uploadProtocol,
                headers: [KeyValue(name: "X-Job", value: "j")], fields: [KeyValue(name: "jf", value: "1")], user: user),
            createdAt: Date())
    }

    func resolve(_ job: Job, config: DaemonConfig = DaemonConfig(), environment: [String: String] = [:]) throws
        -> ResolvedTarget
    {
        try TargetResolver(config: config, environment: environment).resolve(job)
    }

    func failure(_ job: Job, config: DaemonConfig = DaemonConfig(), environment: [String: String] = [:])
        -> TransferFailure?
    {
        #expect(throws: TransferFailure.self) { try resolve(job, config: config, environment: environment) }
    }

    @Test(arguments: [
        ("/data/a.bin", "a.bin"), ("/data/my file#1?.txt", "my%20file%231%3F.txt"),
        ("/d/vidéo;x.mp4", "vid%C3%A9o%3Bx.mp4"),
        ("/d/100%.txt", "100%25.txt"),
    ])
    func trailingSlashAppendsTheEncodedNameForPut(source: String, encoded: String) throws {
        let target = try resolve(Self.job("https://h/dir/", source: source, protocol: .put))
        #expect(target.url == "https://h/dir/" + encoded)
        #expect(target.fileName == (source as NSString).lastPathComponent)
    }

    @Test func autoOverHTTPProbesThenSettles() throws {
        var target = try resolve(Self.job("https://h/dir/"))
        #expect(target.needsProbe, "auto over http asks the server whether it speaks tus")
        #expect(target.url == "https://h/dir/", "the name is appended only once PUT is chosen")
        var tus = target
        tus.settle(.tus)
        #expect(tus.uploadProtocol == .tus && tus.url == "https://h/dir/" && !tus.needsProbe)
        target.settle(.put)
        #expect(target.uploadProtocol == .put)
        #expect(target.url == "https://h/dir/a.bin")
    }

    @Test func aResolvedProtocolIsKeptWithoutProbing() throws {
        var job = Self.job("https://h/dir/")
        job.resolvedProtocol = .tus
        let target = try resolve(job)
        #expect(!target.needsProbe)
        #expect(target.uploadProtocol == .tus)
        #expect(target.url == "https://h/dir/")
    }

    @Test func postKeepsTheURL() throws {
        let target = try resolve(Self.job("https://h/upload/", protocol: .post))
        #expect(target.uploadProtocol == .post)
        #expect(target.url == "https://h/upload/")
    }

    @Test func fullURLIsKept() throws {
        #expect(try resolve(Self.job("https://h/dir/name.bin", protocol: .put)).url == "https://h/dir/name.bin")
    }

    @Test func resolvedProtocolWins() throws {
        var job = Self.job("https://h/dir/")
        job.resolvedProtocol = .post
        #expect(try resolve(job).uploadProtocol == .post)
    }

    @Test func remoteJoinsItsURLAndBringsItsSettings() throws {
        let directory = try TemporaryDirectory()
        let passwordFile = try directory.write("nas.pw", "s3cret\n")
        var config = DaemonConfig()
        config.stallTimeout = 33
        config.remotes["nas"] = RemoteConfig(
            name: "nas", uploadProtocol: .put, url: "https://nas.local/dav/", user: "bob", passwordFile: passwordFile,
            headers: [KeyValue(name: "X-Remote", value: "r")], fields: [KeyValue(name: "rf", value: "2")],
            fileField: "upload",
            caFile: "/ca.pem", http2: true, chunkSize: 4096, resultURLPointer: "/url")
        let target = try resolve(Self.job("nas:/videos/2024/"), config: config)
        #expect(target.uploadProtocol == .put)
        #expect(target.url == "https://nas.local/dav/videos/2024/a.bin")
        #expect(target.headers == [KeyValue(name: "X-Remote", value: "r"), KeyValue(name: "X-Job", value: "j")])
        #expect(target.fields == [KeyValue(name: "rf", value: "2"), KeyValue(name: "jf", value: "1")])
        #expect(target.credentials == BasicCredentials(user: "bob", password: "s3cret"))
        #expect(target.fileField == "upload")
        #expect(target.caFile == "/ca.pem")
        #expect(target.http2 && target.request("PUT").http2)
        #expect(target.chunkSize == 4096)
        #expect(target.resultURLPointer == "/url")
        #expect(target.stallTimeout == 33)
    }

    @Test func remoteWithoutPathUsesItsURL() throws {
        var config = DaemonConfig()
        config.remotes["box"] = RemoteConfig(name: "box", uploadProtocol: .post, url: "https://box/upload")
        #expect(try resolve(Self.job("box:"), config: config).url == "https://box/upload")
    }

    @Test func passwordFromASystemdCredential() throws {
        let directory = try TemporaryDirectory()
        try directory.write("nas-pw", "from-credential")
        var config = DaemonConfig()
        config.remotes["nas"] = RemoteConfig(name: "nas", url: "https://h/", user: "bob", passwordCredential: "nas-pw")
        let target = try resolve(
            Self.job("nas:x/"), config: config, environment: ["CREDENTIALS_DIRECTORY": directory.path])
        #expect(target.credentials?.password == "from-credential")
        let missing = failure(Self.job("nas:x/"), config: config)
        #expect(missing?.error.message.contains("LoadCredential=") == true)
    }

    @Test func unreadablePasswordFileIsAConfigError() {
        var config = DaemonConfig()
        config.remotes["nas"] = RemoteConfig(
            name: "nas", url: "https://h/", user: "bob", passwordFile: "/nonexistent/pw")
        let error = failure(Self.job("nas:x/"), config: config)
        #expect(error?.error.code == "config")
        #expect(error?.error.message.contains("cannot read the password of remote 'nas'") == true)
        #expect(error?.retryable == false)
    }

    @Test func jobUserOverridesTheRemote() throws {
        var config = DaemonConfig()
        config.remotes["nas"] = RemoteConfig(name: "nas", url: "https://h/", user: "bob", passwordFile: "/nonexistent")
        #expect(
            try resolve(Self.job("nas:x", user: "alice:pw:with:colons"), config: config).credentials
                == BasicCredentials(user: "alice", password: "pw:with:colons"))
        #expect(
            try resolve(Self.job("https://h/x", user: "carol")).credentials
                == BasicCredentials(user: "carol", password: ""))
        #expect(try resolve(Self.job("https://h/x")).credentials == nil)
    }

    @Test func unknownRemoteIsAConfigError() {
        let error = failure(Self.job("zzz:path"))
        #expect(error?.error.code == "config")
        #expect(error?.error.message.contains("no remote named 'zzz'") == true)
        #expect(error?.retryable == false)
    }

    @Test func remoteWhoseURLIsAnotherRemoteIsRefused() {
        var config = DaemonConfig()
        config.remotes["loop"] = RemoteConfig(name: "loop", url: "other:dir")
        #expect(failure(Self.job("loop:x"), config: config)?.error.message.contains("not http(s), s3 or file") == true)
    }

    @Test func fileDestinations() throws {
        let directory = try TemporaryDirectory()
        let slash = try resolve(Self.job("file://\(directory.path)/out/"))
        #expect(slash.uploadProtocol == .file)
        #expect(slash.url == "file://\(directory.path)/out/a.bin")
        #expect(!slash.fileURLMayNameFolder)
        // Without a slash, the upload finds out whether the path is a folder (FileTransfer.fileURL).
        let existingDirectory = try resolve(Self.job("file://\(directory.path)"))
        #expect(existingDirectory.url == "file://\(directory.path)" && existingDirectory.fileURLMayNameFolder)
        #expect(try FileTransfer.fileURL(of: existingDirectory) == "file://\(directory.path)/a.bin")
        let name = try resolve(Self.job("file://\(directory.path)/renamed.bin"))
        #expect(try FileTransfer.fileURL(of: name) == "file://\(directory.path)/renamed.bin")
    }

    /// The scheduler resolves every attempt's target: a `stat` there of a folder on a hung mount
    /// (NFS, sshfs) stopped every job and command until the watchdog killed the daemon. Resolving
    /// must not look at the file system: a folder it cannot even search resolves the same.
    @Test func aFileDestinationIsResolvedWithoutLookingAtTheFileSystem() throws {
        let directory = try TemporaryDirectory()
        let folder = directory.path + "/folder"
        #expect(mkdir(folder, 0o700) == 0)
        let asFolder = try resolve(Self.job("file://\(folder)"))
        let missing = try resolve(Self.job("file://\(directory.path)/missing"))
        #expect(asFolder.url == "file://\(folder)")
        #expect(asFolder.fileURLMayNameFolder == missing.fileURLMayNameFolder)
    }

    @Test func s3ResolvesToTheObjectURL() throws {
        let environment = ["AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "HOME": "/nonexistent"]
        let target = try resolve(Self.job("s3://bucket/prefix/"), environment: environment)
        #expect(target.uploadProtocol == .s3)
        #expect(target.s3?.key == "prefix/a.bin")
        #expect(target.url == "https://bucket.s3.us-east-1.amazonaws.com/prefix/a.bin")
    }

    @Test func unsafeSourceNameIsASourceError() {
        let error = failure(Self.job("https://h/dir/", source: "/data/.."))
        #expect(error?.error.code == "source")
    }

    @Test func joinPutsExactlyOneSlash() {
        #expect(TargetResolver.join("https://h/a/", "/b") == "https://h/a/b")
        #expect(TargetResolver.join("https://h/a", "b/") == "https://h/a/b/")
        #expect(TargetResolver.join("https://h/a/", "") == "https://h/a/")
    }
}
