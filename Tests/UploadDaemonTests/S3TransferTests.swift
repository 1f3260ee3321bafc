import Foundation
import Glibc
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

@Suite("S3: part sizing")
struct S3PartSizingTests {
    static let mebibyte: Int64 = 1 << 20

    @Test func defaultIs8MiBAndSmallRequestsRiseTo5MiB() {
        #expect(S3PartSizing.partSize(fileSize: 100 * Self.mebibyte, requested: nil) == 8 * Self.mebibyte)
        #expect(S3PartSizing.partSize(fileSize: 100 * Self.mebibyte, requested: Self.mebibyte) == 5 * Self.mebibyte)
        #expect(
            S3PartSizing.partSize(fileSize: 100 * Self.mebibyte, requested: 16 * Self.mebibyte) == 16 * Self.mebibyte)
    }

    @Test(arguments: [Int64(100) << 30, Int64(80_000) * (1 << 20) + 1, Int64(1) << 40])
    func hugeFilesStayWithin10000Parts(fileSize: Int64) {
        let size = S3PartSizing.partSize(fileSize: fileSize, requested: nil)
        #expect(S3PartSizing.partCount(fileSize: fileSize, partSize: size) <= 10_000)
        #expect(size % Self.mebibyte == 0)
        #expect(size >= 8 * Self.mebibyte)
        // No bigger than needed: one MiB less would need more than 10,000 parts.
        #expect(S3PartSizing.partCount(fileSize: fileSize, partSize: size - Self.mebibyte) > 10_000)
    }

    @Test func exactly10000PartsOfTheRequestedSizeKeepIt() {
        let fileSize = 10_000 * 5 * Self.mebibyte
        #expect(S3PartSizing.partSize(fileSize: fileSize, requested: 5 * Self.mebibyte) == 5 * Self.mebibyte)
        #expect(S3PartSizing.partSize(fileSize: fileSize + 1, requested: 5 * Self.mebibyte) == 6 * Self.mebibyte)
    }

    @Test func rangesCoverTheFileWithAShortLastPart() {
        let part = 5 * Self.mebibyte
        #expect(S3PartSizing.partCount(fileSize: part, partSize: part) == 1)
        #expect(S3PartSizing.partCount(fileSize: part + 1, partSize: part) == 2)
        #expect(S3PartSizing.range(ofPart: 2, fileSize: part + 1, partSize: part) == (part, 1))
        #expect(S3PartSizing.range(ofPart: 1, fileSize: part + 1, partSize: part) == (0, part))
        let fileSize = 101 * Self.mebibyte + 7
        let count = S3PartSizing.partCount(fileSize: fileSize, partSize: part)
        let total = (1...count).reduce(Int64(0)) {
            $0 + S3PartSizing.range(ofPart: $1, fileSize: fileSize, partSize: part).length
        }
        #expect(total == fileSize)
    }
}

@Suite("S3: answers (minimal XML)")
struct S3XMLTests {
    @Test func uploadIDFromCreateMultipartUpload() {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2FkIElE&amp;x</UploadId></InitiateMultipartUploadResult>
            """
        #expect(S3XML.value("UploadId", in: body) == "VXBsb2FkIElE&x")
        #expect(S3XML.value("Missing", in: body) == nil)
    }

    @Test func listPartsPageWithEscapedETagsAndChecksums() {
        let body = """
            <ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>2</NextPartNumberMarker>
              <MaxParts>2</MaxParts><IsTruncated>true</IsTruncated>
              <Part><PartNumber>1</PartNumber><ETag>&quot;7778aef83f66abc1fa1e8477f296d394&quot;</ETag>
                <Size>5242880</Size><ChecksumCRC32C>4waSgw==</ChecksumCRC32C></Part>
              <Part>
                <ETag>&#34;aaaa&#34;</ETag><LastModified>2026-11-29T12:28:33Z</LastModified>
                <PartNumber>2</PartNumber><Size>17</Size>
              </Part>
            </ListPartsResult>
            """
        let page = S3Answer.partsPage(in: body)
        #expect(
            page.parts == [
                S3Answer.ListedPart(
                    number: 1, etag: "\"7778aef83f66abc1fa1e8477f296d394\"", size: 5_242_880, checksumCRC32C: "4waSgw=="
                ),
                S3Answer.ListedPart(number: 2, etag: "\"aaaa\"", size: 17, checksumCRC32C: nil),
            ])
        #expect(page.isTruncated)
        #expect(page.nextPartNumberMarker == 2)
        let last = S3Answer.partsPage(in: "<ListPartsResult><IsTruncated>false</IsTruncated></ListPartsResult>")
        #expect(last == S3Answer.PartsPage(parts: [], isTruncated: false, nextPartNumberMarker: nil))
    }

    @Test func errorDocument() {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match &lt;yours&gt;.</Message><RequestId>1</RequestId></Error>
            """
        #expect(
            S3Answer.error(in: body)
                == S3Answer.ErrorDocument(
                    code: "SignatureDoesNotMatch",
                    message: "The request signature we calculated does not match <yours>."))
        #expect(S3Answer.error(in: "<html><title>502</title></html>") == nil)
        #expect(S3Answer.error(in: "") == nil)
    }

    @Test func elementNamesMustMatchWhole() {
        #expect(
            S3XML.elements("Part", in: "<PartNumber>3</PartNumber><Part><PartNumber>4</PartNumber></Part>") == [
                "<PartNumber>4</PartNumber>"
            ])
        #expect(S3XML.values("Empty", in: "<Empty/><Empty>x</Empty><Empty attr=\"1\">y</Empty>") == ["", "x", "y"])
    }

    @Test func entitiesRoundTrip() {
        #expect(
            S3XML.unescape("a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#34;f&#x22; &bogus; & end")
                == "a & b <c> \"d\" 'e' \"f\" &bogus; & end")
        let text = "x&y<z>\"'"
        #expect(S3XML.unescape(S3XML.escape(text)) == text)
        #expect(S3XML.escape(text) == "x&amp;y&lt;z&gt;&quot;&apos;")
    }

    @Test func completeBodyListsEveryPartInOrder() {
        let body = S3Answer.completeBody([(1, "\"e1\"", "AAAAAA=="), (2, "\"e2\"", nil)])
        #expect(body.contains("<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"))
        #expect(
            body.contains(
                "<Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag><ChecksumCRC32C>AAAAAA==</ChecksumCRC32C></Part><Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part></CompleteMultipartUpload>"
            ))
    }
}

@Suite("S3: error classification")
struct S3FailureTests {
    static let target = S3Target(
        bucket: "b", key: "k.bin", endpoint: "http://127.0.0.1:1", region: "us-east-1", pathStyle: true,
        credentials: S3Credentials(accessKeyID: "AK", secretAccessKey: "SK", sessionToken: nil, source: "remote 'r'"),
        multipartThreshold: 1, signPayload: true)

    func failure(_ status: Int, _ code: String?) -> TransferFailure {
        S3Failure.make(
            status: status, error: code.map { S3Answer.ErrorDocument(code: $0, message: "msg") }, body: "",
            operation: "PutObject",
            s3: Self.target, method: "PUT", retryAfter: nil)
    }

    @Test func theMessageCarriesTheServersCodeAndMessage() {
        let denied = failure(403, "SignatureDoesNotMatch")
        #expect(denied.error.message.hasPrefix("S3 PUT s3://b/k.bin (PutObject): 403 SignatureDoesNotMatch: msg"))
        #expect(denied.error.message.contains("remote 'r'"))
        #expect(denied.error.status == 403)
        #expect(!denied.retryable)
    }

    /// A malformed Authorization header that is not about the region (a server that splits the
    /// header its own way) is not blamed on the region; AWS's, which names one, is.
    @Test func aMalformedAuthorizationBlamesTheRegionOnlyWhenTheServerSaysSo() {
        func message(_ text: String) -> String {
            S3Failure.make(
                status: 400, error: S3Answer.ErrorDocument(code: "AuthorizationHeaderMalformed", message: text),
                body: "", operation: "PutObject", s3: Self.target, method: "PUT", retryAfter: nil
            ).error.message
        }
        let unreadable = message("The authorization header is malformed")
        #expect(!unreadable.contains("region"), "\(unreadable)")
        #expect(unreadable.contains("could not read the Authorization header"), "\(unreadable)")
        let aws = message(
            "The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-west-1'")
        #expect(aws.contains("set region in the remote"), "\(aws)")
    }

    /// A 413 (a proxy's body limit) names the request's size and S3's 5 MiB parts, not the credentials.
    @Test func a413NamesThePartAndTheFiveMiBMinimum() {
        let failure = S3Failure.make(
            status: 413, error: nil, body: "<html><title>413 Request Entity Too Large</title></html>",
            operation: "UploadPart 1 of 3", s3: Self.target, method: "PUT", retryAfter: nil, bodyLength: 8 << 20)
        #expect(!failure.retryable)
        #expect(failure.error.message.contains("refused a request of 8 MiB as too large"), "\(failure.error.message)")
        #expect(failure.error.message.contains("5 MiB") && failure.error.message.contains("client_max_body_size"))
    }

    @Test(arguments: [
        (403, "AccessDenied", false), (400, "InvalidArgument", false), (404, "NoSuchBucket", false),
        (503, "SlowDown", true), (500, "InternalError", true), (400, "RequestTimeout", true), (400, "BadDigest", true),
        (200, "InternalError", true), (502, nil, true),
    ])
    func retryableOrNot(status: Int, code: String?, retryable: Bool) {
        #expect(failure(status, code).retryable == retryable)
    }
}

@Suite("S3: credentials, first found wins")
struct S3CredentialsTests {
    static func remote(_ configure: (inout RemoteConfig) -> Void = { _ in }) -> RemoteConfig {
        var remote = RemoteConfig(name: "r", uploadProtocol: .s3, url: "s3://b/p/")
        configure(&remote)
        return remote
    }

    @Test func remoteSecretFileBeatsTheEnvironment() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("secret", "remote-secret\n")
        let remote = Self.remote {
            $0.accessKeyID = "REMOTEKEY"
            $0.secretAccessKeyFile = file
        }
        let environment = ["AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret", "HOME": directory.path]
        let found = try S3CredentialResolver(environment: environment).resolve(remote: remote)
        #expect(
            found
                == S3Credentials(
                    accessKeyID: "REMOTEKEY", secretAccessKey: "remote-secret", sessionToken: nil, source: "remote 'r'")
        )
    }

    @Test func remoteSecretFromASystemdCredential() throws {
        let directory = try TemporaryDirectory()
        try directory.write("s3-secret", "from-credential")
        let remote = Self.remote {
            $0.accessKeyID = "K"
            $0.secretAccessKeyCredential = "s3-secret"
        }
        let found = try S3CredentialResolver(environment: ["CREDENTIALS_DIRECTORY": directory.path]).resolve(
            remote: remote)
        #expect(found.secretAccessKey == "from-credential")
        let missing = #expect(throws: TransferFailure.self) {
            try S3CredentialResolver(environment: [:]).resolve(remote: remote)
        }
        #expect(missing?.error.message.contains("LoadCredential=") == true)
    }

    @Test func theEnvironmentBeatsTheSharedFile() throws {
        let directory = try TemporaryDirectory()
        try directory.write(
            ".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n")
        let environment = [
            "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret", "AWS_SESSION_TOKEN": "tok",
            "HOME": directory.path,
        ]
        let found = try S3CredentialResolver(environment: environment).resolve(remote: Self.remote())
        #expect(found.accessKeyID == "ENVKEY")
        #expect(found.sessionToken == "tok")
        let fromFile = try S3CredentialResolver(environment: ["HOME": directory.path]).resolve(remote: Self.remote())
        #expect(fromFile.accessKeyID == "FILEKEY")
        #expect(fromFile.secretAccessKey == "filesecret")
        #expect(fromFile.source == directory.path + "/.aws/credentials [default]")
    }

    @Test func theSharedFileHonoursAWSProfile() throws {
        let text = """
            # comment
            [default]
            aws_access_key_id=DEFAULTKEY
            aws_secret_access_key=defaultsecret

            [profile work]
            ; another comment
            AWS_ACCESS_KEY_ID = WORKKEY
            aws_secret_access_key = work/secret+=
            aws_session_token = worktoken
            [other]
            aws_access_key_id = OTHER
            """
        let work = AWSSharedFiles.parse(text, profile: "work")
        #expect(work["aws_access_key_id"] == "WORKKEY")
        #expect(work["aws_secret_access_key"] == "work/secret+=")
        #expect(work["aws_session_token"] == "worktoken")
        #expect(AWSSharedFiles.parse(text, profile: "default")["aws_access_key_id"] == "DEFAULTKEY")
        #expect(AWSSharedFiles.parse(text, profile: "other")["aws_secret_access_key"] == nil, "no secret")
        #expect(AWSSharedFiles.parse(text, profile: "absent").isEmpty)

        let directory = try TemporaryDirectory()
        let file = try directory.write("creds", text)
        let found = try S3CredentialResolver(environment: ["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "work"])
            .resolve(remote: nil)
        #expect(found.accessKeyID == "WORKKEY")
    }

    /// ~/.aws/config as aws-cli reads it: the profile's region and endpoint_url, and keys kept
    /// there rather than in the credentials file; the environment still wins.
    @Test func theAWSConfigFileGivesRegionEndpointAndKeys() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/.aws", withIntermediateDirectories: true)
        let config = [
            "[default]", "region = eu-west-3", "[profile minio]", "region = local-1",
            "endpoint_url = http://127.0.0.1:9000",
            "aws_access_key_id = MINIOKEY", "aws_secret_access_key = miniosecret", "s3 =", "  addressing_style = path",
        ]
        _ = try directory.write(".aws/config", config.joined(separator: "\n"))
        let home = ["HOME": directory.path]
        func resolve(_ environment: [String: String]) throws -> S3Target {
            try #require(
                try S3Target.resolve(
                    destination: .s3(bucket: "b", key: "k"), uploadProtocol: .s3, fileName: "f", remote: nil,
                    environment: home.merging(environment) { $1 }))
        }
        let atAWS = try resolve(["AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "S"])
        #expect(atAWS.region == "eu-west-3")
        #expect(atAWS.endpoint == "https://s3.eu-west-3.amazonaws.com")
        let minio = try resolve(["AWS_PROFILE": "minio"])
        #expect(minio.region == "local-1")
        #expect(minio.endpoint == "http://127.0.0.1:9000")
        #expect(minio.credentials.accessKeyID == "MINIOKEY")
        #expect(minio.credentials.source == directory.path + "/.aws/config [minio]")
        #expect(try resolve(["AWS_PROFILE": "minio", "AWS_REGION": "env-1"]).region == "env-1")
    }

    @Test func nothingFoundSaysWhereItLooked() throws {
        let directory = try TemporaryDirectory()
        let failure = #expect(throws: TransferFailure.self) {
            try S3CredentialResolver(environment: ["HOME": directory.path, "AWS_PROFILE": "p"]).resolve(
                remote: Self.remote())
        }
        let message = failure?.error.message ?? ""
        #expect(failure?.retryable == false)
        #expect(failure?.error.code == "config")
        #expect(message.contains("[remote r]"))
        #expect(message.contains("AWS_ACCESS_KEY_ID"))
        #expect(message.contains("[p] in \(directory.path)/.aws/credentials"))
    }

    @Test func halfConfiguredCredentialsAreErrors() {
        #expect(throws: TransferFailure.self) {
            try S3CredentialResolver(environment: ["AWS_ACCESS_KEY_ID": "K"]).resolve(remote: nil)
        }
        #expect(throws: TransferFailure.self) {
            try S3CredentialResolver(environment: [:]).resolve(remote: Self.remote { $0.accessKeyID = "K" })
        }
        #expect(throws: TransferFailure.self) {
            try S3CredentialResolver(environment: [:]).resolve(remote: Self.remote { $0.secretAccessKeyFile = "/x" })
        }
    }
}

@Suite("S3: target resolution")
struct S3TargetResolutionTests {
    static let credentials = ["AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "HOME": "/nonexistent"]

    func resolve(
        _ destination: String, protocol uploadProtocol: UploadProtocol = .auto, config: String = "",
        environment: [String: String] = Self.credentials
    ) throws -> ResolvedTarget {
        let job = Job(
            id: JobID(1),
            spec: JobSpec(source: "/data/my file.bin", destination: destination, uploadProtocol: uploadProtocol),
            createdAt: Date())
        return try TargetResolver(config: try DaemonConfig.parse(config), environment: environment).resolve(job)
    }

    @Test(arguments: [
        ("s3://bucket/prefix/", "prefix/my file.bin"), ("s3://bucket", "my file.bin"), ("s3://bucket/", "my file.bin"),
        ("s3://bucket/exact/name.bin", "exact/name.bin"),
    ])
    func aTrailingSlashOrNoKeyAppendsTheFileName(destination: String, key: String) throws {
        let target = try resolve(destination)
        #expect(target.uploadProtocol == .s3)
        #expect(target.s3?.bucket == "bucket")
        #expect(target.s3?.key == key)
    }

    @Test func awsItselfIsVirtualHostedInItsRegion() throws {
        var environment = Self.credentials
        environment["AWS_REGION"] = "eu-west-1"
        let target = try resolve("s3://my-bucket/dir/", environment: environment)
        let s3 = try #require(target.s3)
        #expect(s3.region == "eu-west-1")
        #expect(!s3.pathStyle)
        #expect(s3.signPayload == false, "https: the payload travels as UNSIGNED-PAYLOAD")
        #expect(s3.objectURL == "https://my-bucket.s3.eu-west-1.amazonaws.com/dir/my%20file.bin")
        #expect(target.url == s3.objectURL)
        #expect(s3.multipartThreshold == 8 << 20)
    }

    @Test func regionFallsBackToAWSDefaultRegionThenUSEast1() throws {
        var environment = Self.credentials
        #expect(try resolve("s3://b/k", environment: environment).s3?.region == "us-east-1")
        environment["AWS_DEFAULT_REGION"] = "ap-south-1"
        #expect(try resolve("s3://b/k", environment: environment).s3?.region == "ap-south-1")
    }

    @Test func aBucketThatIsNotADNSLabelStaysPathStyle() throws {
        let s3 = try #require(try resolve("s3://my.dotted.bucket/k").s3)
        #expect(s3.pathStyle)
        #expect(s3.objectURL == "https://s3.us-east-1.amazonaws.com/my.dotted.bucket/k")
    }

    @Test func aCustomEndpointFromTheEnvironmentIsPathStyle() throws {
        var environment = Self.credentials
        environment["AWS_ENDPOINT_URL"] = "http://127.0.0.1:8333/"
        let s3 = try #require(try resolve("s3://b/k", environment: environment).s3)
        #expect(s3.pathStyle)
        #expect(s3.signPayload, "plain http: the payload hash is signed")
        #expect(s3.objectURL == "http://127.0.0.1:8333/b/k")
        #expect(s3.url(key: "k", query: "uploads=") == "http://127.0.0.1:8333/b/k?uploads=")
    }

    @Test func aRemoteSetsEverything() throws {
        let directory = try TemporaryDirectory()
        let secret = try directory.write("secret", "sk")
        let config = """
            [remote store]
            protocol = s3
            url = s3://media/uploads/
            endpoint = https://minio.example:443
            region = eu-central-1
            access_key_id = AK2
            secret_access_key_file = \(secret)
            path_style = false
            multipart_threshold = 64M
            sign_payload = yes
            chunk_size = 16M
            """
        let target = try resolve("store:2026/", config: config, environment: ["HOME": directory.path])
        let s3 = try #require(target.s3)
        #expect(s3.key == "uploads/2026/my file.bin")
        #expect(s3.endpoint == "https://minio.example")
        #expect(s3.region == "eu-central-1")
        #expect(!s3.pathStyle)
        #expect(s3.objectURL == "https://media.minio.example/uploads/2026/my%20file.bin")
        #expect(s3.credentials.accessKeyID == "AK2")
        #expect(s3.credentials.secretAccessKey == "sk")
        #expect(s3.multipartThreshold == 64 << 20)
        #expect(s3.signPayload)
        #expect(target.chunkSize == 16 << 20)
    }

    @Test func theRemoteEndpointBeatsTheEnvironment() throws {
        var environment = Self.credentials
        environment["AWS_ENDPOINT_URL"] = "http://env:1"
        let config = "[remote s]\nprotocol = s3\nurl = s3://b/\nendpoint = http://remote:2\n"
        #expect(try resolve("s:", config: config, environment: environment).s3?.endpoint == "http://remote:2")
    }

    @Test func mismatchedProtocolsAndMissingCredentialsFailClearly() throws {
        let wrongProtocol = #expect(throws: TransferFailure.self) { try resolve("s3://b/k", protocol: .put) }
        #expect(wrongProtocol?.error.message.contains("s3 protocol") == true)
        let httpWithS3 = #expect(throws: TransferFailure.self) { try resolve("https://h/dir/", protocol: .s3) }
        #expect(httpWithS3?.error.message.contains("s3://bucket/prefix/") == true)
        let noCredentials = #expect(throws: TransferFailure.self) {
            try resolve("s3://b/k", environment: ["HOME": "/nonexistent"])
        }
        #expect(noCredentials?.retryable == false)
        #expect(noCredentials?.error.message.contains("no S3 credentials") == true)
        let badEndpoint = #expect(throws: TransferFailure.self) {
            try resolve("s3://b/k", environment: Self.credentials.merging(["AWS_ENDPOINT_URL": "ftp://x"]) { $1 })
        }
        #expect(badEndpoint?.error.code == "config")
    }

    @Test func otherProtocolsGetNoS3Settings() throws {
        #expect(try resolve("https://h/dir/", protocol: .put).s3 == nil)
    }

    @Test func badS3ConfigValuesAreRejected() {
        #expect(throws: DaemonConfig.LoadError.self) {
            try DaemonConfig.parse("[remote s]\nurl = s3://b/\npath_style = maybe\n")
        }
        #expect(throws: DaemonConfig.LoadError.self) {
            try DaemonConfig.parse("[remote s]\nurl = s3://b/\nmultipart_threshold = lots\n")
        }
    }
}

@Suite("S3: parts in flight at once", .timeLimit(.minutes(1)))
struct S3PartWindowTests {
    static let part: Int64 = 5 << 20
    /// Five full parts and a short sixth.
    static let size = 5 * part + (1 << 20)
    static let total = size

    let directory: TemporaryDirectory
    let source: SourceFile

    init() throws {
        directory = try TemporaryDirectory()
        let path = directory.path + "/big.bin"
        // Sparse: the parts are read for their checksums, but no bytes are written.
        let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        #expect(fd >= 0 && ftruncate(fd, off_t(Self.size)) == 0)
        close(fd)
        let snapshot = SourceSnapshot(
            kind: .copy, path: path, size: Self.size, device: 0, inode: 0, modificationTimeNanoseconds: 0)
        source = try SourceFile(snapshot: snapshot, displayPath: path)
    }

    func upload(
        _ server: ScriptedS3, _ commits: CommitLog, rateLimit: Int64? = nil, checkpoint: Checkpoint? = nil
    ) -> Task<JobResult, any Error> {
        let s3 = S3Target(
            bucket: "b", key: "big.bin", endpoint: "http://127.0.0.1:1", region: "us-east-1", pathStyle: true,
            credentials: S3Credentials(accessKeyID: "AK", secretAccessKey: "SK", sessionToken: nil, source: "test"),
            multipartThreshold: 1, signPayload: false)
        var job = Job(
            id: JobID(7), spec: JobSpec(source: source.displayPath, destination: "s3://b/big.bin", uploadProtocol: .s3),
            createdAt: Date())
        job.checkpoint = checkpoint
        let context = TransferContext(
            job: job,
            target: ResolvedTarget(
                uploadProtocol: .s3, url: s3.objectURL, fileName: "big.bin", chunkSize: Self.part,
                rateLimit: rateLimit.map { TransferRate(bytesPerSecond: $0) },
                s3: s3),
            source: source, meter: ProgressMeter(),
            commit: { acked, _, durable in commits.append(acked, durable: durable) })
        return Task { try await S3Transfer(http: server).upload(context) }
    }

    @Test func partsGoUpFourAtOnceAndOnlyFinishedPartsCountAsAcknowledged() async throws {
        try #require(S3Transfer.partsInFlight == 4, "the script below assumes four parts in flight")
        let server = ScriptedS3()
        let commits = CommitLog()
        let upload = upload(server, commits)
        defer { upload.cancel() }
        try #require(await eventually { server.waitingParts == [1, 2, 3, 4] })
        #expect(commits.entries == [.init(acked: 0, durable: true)], "only the UploadId, before any part")

        // Parts finish out of order; each answer acknowledges exactly the parts done so far, and
        // frees a place for the next part.
        let script: [(answer: Int, acked: Int64, inFlight: Set<Int>)] = [
            (3, Self.part, [1, 2, 4, 5]),
            (1, 2 * Self.part, [2, 4, 5, 6]),
            (6, 2 * Self.part + (1 << 20), [2, 4, 5]),
            (5, 3 * Self.part + (1 << 20), [2, 4]),
            (4, 4 * Self.part + (1 << 20), [2]),
        ]
        for (index, step) in script.enumerated() {
            try #require(server.answer(step.answer), "part \(step.answer) was in flight")
            #expect(await eventually { commits.entries.count == index + 2 })
            #expect(commits.entries.last == .init(acked: step.acked, durable: false), "after part \(step.answer)")
            #expect(await eventually { server.waitingParts == step.inFlight }, "after part \(step.answer)")
        }
        #expect(server.completedParts == nil, "not completed while part 2 is in flight")
        try #require(server.answer(2))
        _ = try await upload.value
        #expect(commits.entries.last == .init(acked: Self.total, durable: false))
        #expect(server.completedParts == [1, 2, 3, 4, 5, 6])
        #expect(server.maxInFlight == 4)
        #expect(server.startedParts.sorted() == [1, 2, 3, 4, 5, 6], "each part sent once")
    }

    @Test func aFailingPartCancelsThoseInFlightAndFailsTheAttemptWithItsError() async throws {
        let server = ScriptedS3()
        let commits = CommitLog()
        let upload = upload(server, commits)
        defer { upload.cancel() }
        try #require(await eventually { server.waitingParts == [1, 2, 3, 4] })
        #expect(server.answer(2, .failed(status: 403, code: "AccessDenied")))
        let failure = await #expect(throws: TransferFailure.self) { try await upload.value }
        #expect(
            failure?.error.message.hasPrefix("S3 PUT s3://b/big.bin (UploadPart 2 of 6): 403 AccessDenied") == true,
            "\(String(describing: failure))")
        #expect(failure?.retryable == false)
        #expect(server.canceledParts == [1, 3, 4])
        #expect(server.startedParts.sorted() == [1, 2, 3, 4], "no part started after the failure")
        #expect(server.completedParts == nil)
        #expect(commits.entries == [.init(acked: 0, durable: true)], "nothing acknowledged")
    }

    @Test func cancelingTheAttemptCancelsEveryPartInFlight() async throws {
        let server = ScriptedS3()
        let upload = upload(server, CommitLog())
        defer { upload.cancel() }
        try #require(await eventually { server.waitingParts == [1, 2, 3, 4] })
        upload.cancel()
        await #expect(throws: CancellationError.self) { try await upload.value }
        #expect(server.canceledParts == [1, 2, 3, 4])
        #expect(server.startedParts.count == 4)
    }

    @Test func aResumedUploadSendsOnlyWhatTheServerLacks() async throws {
        let server = ScriptedS3(answerAtOnce: true)
        let zeros = try await PartChecksums.compute(source, offset: 0, length: Self.part, sha256: false).crc32cBase64
        // Parts 2 and 5 are held intact; part 3 is held with other bytes, so it goes again.
        server.listedParts = [(2, Self.part, zeros), (3, Self.part, "AAAAAA=="), (5, Self.part, zeros)]
        let commits = CommitLog()
        let upload = upload(
            server, commits, checkpoint: Checkpoint(S3Checkpoint(uploadID: "U1", key: "big.bin", partSize: Self.part)))
        _ = try await upload.value
        #expect(server.startedParts.sorted() == [1, 3, 4, 6])
        #expect(server.completedParts == [1, 2, 3, 4, 5, 6])
        let acked = commits.entries.map(\.acked)
        #expect(acked.first == 2 * Self.part, "the server's parts count from the start")
        #expect(acked == acked.sorted() && Set(acked).count == acked.count, "acknowledged bytes only grow: \(acked)")
        #expect(acked.last == Self.total)
    }

    /// Completed just before the daemon died, before that was journaled: the upload ID is gone,
    /// the object is there with this file's multipart ETag, so nothing is sent again.
    @Test func anUploadCompletedBeforeACrashIsNotSentAgain() async throws {
        let server = ScriptedS3(answerAtOnce: true)
        server.uploadGone = true
        let md5 = try #require(MessageDigest(algorithm: "md5"))
        for number in 1...6 {
            let range = S3PartSizing.range(ofPart: number, fileSize: Self.size, partSize: Self.part)
            let part = try #require(MessageDigest(algorithm: "md5"))
            try source.forEachPiece(offset: range.offset, length: range.length) { part.update($0) }
            part.finish().withUnsafeBytes { md5.update($0) }
        }
        let etag = "\"\(Hex.encode(md5.finish()))-6\""
        server.objectHeaders = [
            KeyValue(name: "content-length", value: "\(Self.size)"), KeyValue(name: "etag", value: etag),
        ]
        let result = try await upload(
            server, CommitLog(),
            checkpoint: Checkpoint(S3Checkpoint(uploadID: "U1", key: "big.bin", partSize: Self.part))
        ).value
        #expect(result.url?.hasSuffix("/big.bin") == true)
        #expect(server.startedParts.isEmpty, "nothing sent again")
        #expect(server.completedParts == nil)
    }

    /// The same object but another file's bytes (or a plain ETag): sent again, in full.
    @Test func anObjectThatDoesNotMatchIsSentAgain() async throws {
        let server = ScriptedS3(answerAtOnce: true)
        server.uploadGone = true
        server.objectHeaders = [
            KeyValue(name: "content-length", value: "\(Self.size)"),
            KeyValue(name: "etag", value: "\"0123456789abcdef-6\""),
        ]
        _ = try await upload(
            server, CommitLog(),
            checkpoint: Checkpoint(S3Checkpoint(uploadID: "U1", key: "big.bin", partSize: Self.part))
        )
        .value
        #expect(server.startedParts.sorted() == [1, 2, 3, 4, 5, 6])
    }

    /// Issue 48: a server without ListParts (501, a 500 each time, a plain 404): the upload is
    /// aborted and begun again, once, instead of retried for a day.
    @Test(arguments: [
        (501, "<Error><Code>NotImplemented</Code><Message>not implemented</Message></Error>", 1),
        (500, "<Error><Code>InternalError</Code><Message>oops</Message></Error>", 2), (404, "404 page not found", 1),
    ])
    func aServerWithoutListPartsGetsANewUpload(status: Int, body: String, asked: Int) async throws {
        let server = ScriptedS3(answerAtOnce: true)
        server.listPartsAnswer = (status, body)
        let result = try await upload(
            server, CommitLog(),
            checkpoint: Checkpoint(S3Checkpoint(uploadID: "OLD", key: "big.bin", partSize: Self.part))
        ).value
        #expect(result.url?.hasSuffix("/big.bin") == true)
        #expect(server.listPartsAsked == asked, "a 500 is asked once more before it counts")
        #expect(server.aborted == ["OLD"], "the old upload is aborted")
        #expect(server.created == 1, "one new upload")
        #expect(server.completedParts == [1, 2, 3, 4, 5, 6])
    }

    /// Any other ListParts error keeps its class: a 503 SlowDown is retried later, nothing aborted.
    @Test func otherListPartsErrorsKeepTheirClass() async throws {
        let server = ScriptedS3(answerAtOnce: true)
        server.listPartsAnswer = (503, "<Error><Code>SlowDown</Code><Message>slow</Message></Error>")
        let failure = await #expect(throws: TransferFailure.self) {
            try await upload(
                server, CommitLog(),
                checkpoint: Checkpoint(S3Checkpoint(uploadID: "OLD", key: "big.bin", partSize: Self.part))
            ).value
        }
        #expect(failure?.retryable == true)
        #expect(failure?.error.message.contains("SlowDown") == true)
        #expect(server.aborted.isEmpty && server.created == 0)
    }

    @Test func underARateLimitPartsGoOneAtATime() async throws {
        let server = ScriptedS3(answerAtOnce: true)
        _ = try await upload(server, CommitLog(), rateLimit: 10 << 20).value
        #expect(server.completedParts == [1, 2, 3, 4, 5, 6])
        #expect(server.maxInFlight == 1)
    }
}

/// What the transfer committed, in order.
final class CommitLog: Sendable {
    struct Entry: Sendable, Equatable {
        var acked: Int64
        var durable: Bool
    }

    private let log = Mutex<[Entry]>([])
    var entries: [Entry] { log.withLock { $0 } }
    func append(_ acked: Int64, durable: Bool) { log.withLock { $0.append(Entry(acked: acked, durable: durable)) } }
}

/// An S3 server behind the HTTP seam. CreateMultipartUpload answers UploadId `U1`; each UploadPart
/// waits until the test answers it (or is answered after a moment with `answerAtOnce`), and a
/// canceled request ends at once with CancellationError, as HTTPClient's do.
final class ScriptedS3: HTTPSending {
    enum Reply: Sendable {
        case stored
        case failed(status: Int, code: String)
    }

    private struct State {
        var waiting: [Int: CheckedContinuation<HTTPResponse, any Error>] = [:]
        var canceledBeforeWaiting: Set<Int> = []
        var inFlight = 0
        var maxInFlight = 0
        var started: [Int] = []
        var canceled: Set<Int> = []
        var completed: [Int]?
        var listed: [(number: Int, size: Int64, crc32c: String)] = []
        /// ListParts answers NoSuchUpload, and HEAD answers these headers (404 when nil).
        var uploadGone = false
        var objectHeaders: [KeyValue]?
        /// ListParts answers this instead (a server without ListParts); how often it was asked.
        var listPartsAnswer: (status: Int, body: String)?
        var listPartsAsked = 0
        /// CreateMultipartUpload requests, and the UploadIds AbortMultipartUpload named.
        var created = 0
        var aborted: [String] = []
    }

    private let state = Mutex(State())
    private let answerAtOnce: Bool

    init(answerAtOnce: Bool = false) { self.answerAtOnce = answerAtOnce }

    var waitingParts: Set<Int> { state.withLock { Set($0.waiting.keys) } }
    var startedParts: [Int] { state.withLock { $0.started } }
    var canceledParts: Set<Int> { state.withLock { $0.canceled } }
    var maxInFlight: Int { state.withLock { $0.maxInFlight } }
    /// The part numbers CompleteMultipartUpload listed, nil before it came.
    var completedParts: [Int]? { state.withLock { $0.completed } }
    var uploadGone: Bool {
        get { state.withLock { $0.uploadGone } }
        set { state.withLock { $0.uploadGone = newValue } }
    }
    var objectHeaders: [KeyValue]? {
        get { state.withLock { $0.objectHeaders } }
        set { state.withLock { $0.objectHeaders = newValue } }
    }

    var listPartsAnswer: (status: Int, body: String)? {
        get { state.withLock { $0.listPartsAnswer } }
        set { state.withLock { $0.listPartsAnswer = newValue } }
    }
    var listPartsAsked: Int { state.withLock { $0.listPartsAsked } }
    var created: Int { state.withLock { $0.created } }
    var aborted: [String] { state.withLock { $0.aborted } }

    var listedParts: [(number: Int, size: Int64, crc32c: String)] {
        get { state.withLock { $0.listed } }
        set { state.withLock { $0.listed = newValue } }
    }

    /// Answers a waiting UploadPart; false when that part was not waiting.
    func answer(_ number: Int, _ reply: Reply = .stored) -> Bool {
        guard let continuation = state.withLock({ $0.waiting.removeValue(forKey: number) }) else { return false }
        state.withLock { $0.inFlight -= 1 }
        continuation.resume(returning: Self.response(number, reply))
        return true
    }

    func send(_ request: HTTPRequest, meter: ProgressMeter?) async throws -> HTTPResponse {
        let query = request.url.contains("?") ? String(request.url.split(separator: "?", maxSplits: 1)[1]) : ""
        switch request.method {
        case "POST" where query == "uploads=":
            state.withLock { $0.created += 1 }
            return HTTPResponse(status: 200, headers: [], body: Array("<UploadId>U1</UploadId>".utf8))
        case "PUT" where query.hasPrefix("partNumber="):
            let number = Int(query.dropFirst("partNumber=".count).prefix { $0 != "&" })!
            return try await part(number)
        case "POST":
            guard case .bytes(let body) = request.body else { return HTTPResponse(status: 400, headers: [], body: []) }
            let numbers = S3XML.values("PartNumber", in: String(decoding: body, as: UTF8.self)).compactMap { Int($0) }
            state.withLock { $0.completed = numbers }
            return HTTPResponse(status: 200, headers: [], body: Array("<CompleteMultipartUploadResult/>".utf8))
        case "HEAD":
            guard let headers = objectHeaders else { return HTTPResponse(status: 404, headers: [], body: []) }
            return HTTPResponse(status: 200, headers: headers, body: [])
        case "GET" where listPartsAnswer != nil:
            let answer = state.withLock {
                $0.listPartsAsked += 1
                return $0.listPartsAnswer!
            }
            return HTTPResponse(status: answer.status, headers: [], body: Array(answer.body.utf8))
        case "DELETE" where query.hasPrefix("uploadId="):
            state.withLock { $0.aborted.append(String(query.dropFirst("uploadId=".count))) }
            return HTTPResponse(status: 204, headers: [], body: [])
        case "GET" where uploadGone:
            let body = "<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>"
            return HTTPResponse(status: 404, headers: [], body: Array(body.utf8))
        case "GET":
            let parts = listedParts.map {
                "<Part><PartNumber>\($0.number)</PartNumber><ETag>\"e\($0.number)\"</ETag><Size>\($0.size)</Size>"
                    + "<ChecksumCRC32C>\($0.crc32c)</ChecksumCRC32C></Part>"
            }
            let body = "<ListPartsResult><IsTruncated>false</IsTruncated>\(parts.joined())</ListPartsResult>"
            return HTTPResponse(status: 200, headers: [], body: Array(body.utf8))
        default:
            return HTTPResponse(status: 204, headers: [], body: [])
        }
    }

    private func part(_ number: Int) async throws -> HTTPResponse {
        state.withLock {
            $0.started.append(number)
            $0.inFlight += 1
            $0.maxInFlight = max($0.maxInFlight, $0.inFlight)
        }
        if answerAtOnce {
            defer { state.withLock { $0.inFlight -= 1 } }
            try await Task.sleep(for: .milliseconds(10))
            return Self.response(number, .stored)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let canceled = state.withLock {
                    if $0.canceledBeforeWaiting.remove(number) != nil {
                        $0.inFlight -= 1
                        $0.canceled.insert(number)
                        return true
                    }
                    $0.waiting[number] = continuation
                    return false
                }
                if canceled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let continuation = state.withLock {
                guard let continuation = $0.waiting.removeValue(forKey: number) else {
                    $0.canceledBeforeWaiting.insert(number)
                    return CheckedContinuation<HTTPResponse, any Error>?.none
                }
                $0.inFlight -= 1
                $0.canceled.insert(number)
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    private static func response(_ number: Int, _ reply: Reply) -> HTTPResponse {
        switch reply {
        case .stored:
            return HTTPResponse(status: 200, headers: [KeyValue(name: "etag", value: "\"e\(number)\"")], body: [])
        case .failed(let status, let code):
            let body = "<Error><Code>\(code)</Code><Message>scripted</Message></Error>"
            return HTTPResponse(status: status, headers: [], body: Array(body.utf8))
        }
    }
}
