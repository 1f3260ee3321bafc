import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

@Suite("DaemonConfig: uploadd.conf")
struct DaemonConfigTests {
    func loadError(_ text: String) -> String {
        let error = #expect(throws: DaemonConfig.LoadError.self) { try DaemonConfig.parse(text) }
        return error?.message ?? ""
    }

    @Test func daemonKeys() throws {
        let config = try DaemonConfig.parse(
            """
            [daemon]
            transfers = 5
            retry_attempts = 3
            retry_max_delay = 30
            retry_base_delay = 250
            stall_timeout = 90
            connect_timeout = 5
            """)
        #expect(config.maxTransfers == 5)
        #expect(config.retry.maxAttempts == 3)
        #expect(config.retry.maxDelay == .seconds(30))
        #expect(config.retry.baseDelay == .milliseconds(250))
        #expect(config.stallTimeout == 90)
        #expect(config.connectTimeout == 5)
        #expect(config.warnings.isEmpty)
    }

    @Test func emptyConfigIsTheDefault() throws {
        #expect(try DaemonConfig.parse("") == DaemonConfig())
        #expect(DaemonConfig().maxTransfers == 2)
    }

    @Test func remoteWithRepeatedHeadersAndFields() throws {
        let config = try DaemonConfig.parse(
            """
            [remote nas]
            url = https://nas.local/dav/
            protocol = PUT
            user = bob
            password_file = ~/.config/uploadd/nas.pw
            header = X-A: 1
            header = X-B: 2
            field = album=holidays
            field = tag=a=b
            file_field = upload
            ca_file = /etc/ssl/private-ca.pem
            chunk_size = 8M
            result_url_pointer = /data/url
            http2 = yes

            [remote cred]
            url = s3://bucket/
            password_credential = s3-secret
            """)
        let nas = try #require(config.remotes["nas"])
        #expect(nas.name == "nas")
        #expect(nas.url == "https://nas.local/dav/")
        #expect(nas.uploadProtocol == .put)
        #expect(nas.user == "bob")
        #expect(nas.passwordFile == "~/.config/uploadd/nas.pw")
        #expect(nas.headers == [KeyValue(name: "X-A", value: "1"), KeyValue(name: "X-B", value: "2")])
        #expect(nas.fields == [KeyValue(name: "album", value: "holidays"), KeyValue(name: "tag", value: "a=b")])
        #expect(nas.fileField == "upload")
        #expect(nas.caFile == "/etc/ssl/private-ca.pem")
        #expect(nas.chunkSize == 8 << 20)
        #expect(nas.resultURLPointer == "/data/url")
        #expect(nas.http2)
        #expect(config.remotes["cred"]?.http2 == false, "HTTP/1.1 unless a remote allows HTTP/2")
        #expect(config.remotes["cred"]?.passwordCredential == "s3-secret")
        #expect(config.remotes["cred"]?.uploadProtocol == .auto)
    }

    @Test(arguments: [
        ("[daemon]\ntransfers = 0\n", "line 2: transfers must be a whole number from 1 to 64"),
        ("[daemon]\n\ntransfers = many\n", "line 3: transfers"),
        ("[daemon]\nretry_attempts = -1\n", "line 2: retry_attempts"),
        ("[daemon]\nstall_timeout = 1.5\n", "line 2: stall_timeout"),
        ("[remote x]\nurl = https://h/\nprotocol = ftp\n", "line 3: [remote x] protocol must be one of"),
        ("[remote x]\nurl = https://h/\nheader = no colon here\n", "line 3: [remote x] header"),
        ("[remote x]\nurl = https://h/\nfield = =v\n", "line 3: [remote x] field"),
        (
            "[remote x]\nurl = https://h/\nheader = Transfer-Encoding: chunked\n",
            "line 3: [remote x] Transfer-Encoding cannot be set: uploadd sets it"
        ),
        (
            "[remote x]\nurl = https://h/\nchunk_size = big\n",
            "line 3: [remote x] chunk_size: 'big' is not a chunk size"
        ),
        ("[remote x]\nurl = https://h/\nchunk_size = 8T\n", "line 3: [remote x] chunk_size: '8T' is not a chunk size"),
        ("# c\n[remote x]\nuser = bob\n", "line 2: [remote x] needs a url"),
        ("[remote]\nurl = https://h/\n", "line 1: a remote needs a name"),
        ("[daemon]\nthis is not ini\n", "line 2: expected key = value"),
    ])
    func badValuesGiveLineNumbers(text: String, message: String) {
        let actual = loadError(text)
        #expect(actual.contains(message), "\(actual)")
    }

    @Test func unknownKeysBecomeWarnings() throws {
        let config = try DaemonConfig.parse(
            """
            [daemon]
            transfers = 2
            tranfers = 4
            [remote nas]
            url = https://h/
            colour = blue
            """)
        #expect(config.maxTransfers == 2)
        #expect(config.remotes["nas"] != nil)
        #expect(config.warnings.count == 2)
        #expect(config.warnings.contains { $0.hasPrefix("line 3:") && $0.contains("'tranfers'") })
        #expect(
            config.warnings.contains {
                $0.hasPrefix("line 6:") && $0.contains("'colour'") && $0.contains("[remote nas]")
            })
    }

    /// A misspelt section would put every setting back to its default without a word: it is an
    /// error, as are duplicate sections, and every problem of the file is reported at once.
    @Test func unknownAndDuplicateSectionsAreErrorsAndAllProblemsAreReported() {
        let error = #expect(throws: DaemonConfig.LoadError.self) {
            try DaemonConfig.parse(
                """
                [deamon]
                transfers = 2
                [daemon]
                transfers = 99
                stall_timeout = soon
                [daemon]
                [remote a]
                url = https://h/
                [remote a]
                url = https://h2/
                """)
        }
        let lines = error?.message.split(separator: "\n").map(String.init) ?? []
        #expect(
            lines.contains {
                $0.hasPrefix("line 1:") && $0.contains("unknown section [deamon] (did you mean [daemon]?)")
            }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("line 4:") && $0.contains("transfers") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("line 5:") && $0.contains("stall_timeout") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("line 6:") && $0.contains("a second [daemon] section") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("line 9:") && $0.contains("a second [remote a]") }, "\(lines)")
        #expect(lines.count == 5, "\(lines)")
    }

    @Test func loadNamesTheFile() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("uploadd.conf", "[daemon]\ntransfers = 100\n")
        let error = #expect(throws: DaemonConfig.LoadError.self) { try DaemonConfig.load(path: path) }
        #expect(error?.description == "\(path): line 2: transfers must be a whole number from 1 to 64")
    }

    @Test func loadReadsAFile() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("uploadd.conf", "[daemon]\ntransfers = 7\n")
        #expect(try DaemonConfig.load(path: path).maxTransfers == 7)
    }

    // MARK: Files others can write (issue 47, item 2)

    /// The lines of `load`'s error, without the file's name before each.
    func loadProblems(_ path: String, environment: [String: String] = ["PATH": "/usr/bin:/bin"]) -> [String] {
        let error = #expect(throws: DaemonConfig.LoadError.self) {
            try DaemonConfig.load(path: path, environment: environment)
        }
        return error?.message.split(separator: "\n").map(String.init) ?? []
    }

    @Test func aConfigFileOthersCanWriteIsRefused() throws {
        let directory = try TemporaryDirectory()
        let real = directory.path.replacingOccurrences(of: "//", with: "/")
        let path = real + "/uploadd.conf"
        try directory.write("uploadd.conf", "[daemon]\ntransfers = 7\n")
        chmod(path, 0o666)
        let error = #expect(throws: DaemonConfig.LoadError.self) { try DaemonConfig.load(path: path) }
        #expect(
            error?.description
                == "\(path): refusing the config file \(path): its group and others can write to it (mode 666); chmod go-w \(path)"
        )
        chmod(path, 0o644)
        #expect(try DaemonConfig.load(path: path).maxTransfers == 7)
    }

    @Test func aHookProgramOthersCanWriteIsRefusedWhereverItIsFound() throws {
        let directory = try TemporaryDirectory()
        let real = directory.path.replacingOccurrences(of: "//", with: "/")
        let bin = real + "/bin"
        let program = real + "/bin/index-photos"
        try directory.write("bin/index-photos", "#!/bin/sh\n")
        chmod(program, 0o757)
        let path = real + "/uploadd.conf"
        try directory.write(
            "uploadd.conf",
            """
            [daemon]
            on_complete = sh -c 'true'
            on_failure = index-photos --failed
            [remote nas]
            url = file:///tmp/
            on_complete = \(program) "with args"
            on_failure = no-such-program
            """)
        // Found on PATH as the hook runner finds it; a program that is nowhere is not refused here.
        let problems = loadProblems(path, environment: ["PATH": "\(bin):/usr/bin:/bin"])
        #expect(
            problems == [
                "refusing the [daemon] on_failure program \(program): others can write to it (mode 757); chmod o-w \(program)",
                "refusing the [remote nas] on_complete program \(program): others can write to it (mode 757); chmod o-w \(program)",
            ])
        chmod(program, 0o755)
        #expect(throws: Never.self) { try DaemonConfig.load(path: path, environment: ["PATH": bin]) }
    }

    @Test func secretAndCAFilesOthersCanWriteAreRefusedAndOnesTheyCanReadWarned() throws {
        let directory = try TemporaryDirectory()
        let real = directory.path.replacingOccurrences(of: "//", with: "/")
        let password = real + "/password"
        try directory.write("password", "pw\n")
        let key = real + "/key"
        try directory.write("key", "secret\n")
        let ca = real + "/ca.pem"
        try directory.write("ca.pem", "-----BEGIN CERTIFICATE-----\n")
        chmod(password, 0o660)
        chmod(key, 0o646)
        chmod(ca, 0o664)
        let path = real + "/uploadd.conf"
        try directory.write(
            "uploadd.conf",
            """
            [remote nas]
            url = https://nas.example/dav/
            user = me
            password_file = \(password)
            ca_file = \(ca)
            [remote s3]
            url = s3://bucket/
            access_key_id = AKIA
            secret_access_key_file = \(key)
            """)
        #expect(
            loadProblems(path) == [
                "refusing the [remote nas] password_file \(password): its group can write to it (mode 660); chmod g-w \(password)",
                "refusing the [remote nas] ca_file \(ca): its group can write to it (mode 664); chmod g-w \(ca)",
                "refusing the [remote s3] secret_access_key_file \(key): others can write to it (mode 646); chmod o-w \(key)",
            ])
        // Readable by others stays a warning, as before.
        for file in [password, key, ca] { chmod(file, 0o644) }
        let config = try DaemonConfig.load(path: path)
        #expect(
            config.warnings.contains(
                "[remote nas]: \(password) is readable by others (mode 644); chmod 600 \(password)"))
        #expect(config.warnings.contains("[remote s3]: \(key) is readable by others (mode 644); chmod 600 \(key)"))
    }

    @Test func aMissingFileIsTheDefaultConfig() throws {
        let directory = try TemporaryDirectory()
        #expect(try DaemonConfig.load(path: directory.path + "/absent.conf") == DaemonConfig())
    }
}
