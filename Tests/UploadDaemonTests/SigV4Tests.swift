import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

/// The worked examples of "Signature Calculations for the Authorization Header: Transferring
/// Payload in a Single Chunk" in Amazon S3's API reference: credentials AKIAIOSFODNN7EXAMPLE /
/// wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, bucket examplebucket, us-east-1, 20130524T000000Z.
@Suite("SigV4: AWS's published examples")
struct SigV4ExampleTests {
    static let signer = SigV4Signer(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        sessionToken: nil, region: "us-east-1")
    static let date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
    static let empty = SigV4Signer.emptyPayloadHash
    static let host = "https://examplebucket.s3.amazonaws.com"
    static let scope = "20130524/us-east-1/s3/aws4_request"

    func authorization(_ headers: [KeyValue]) -> String? { headers.first { $0.name == "Authorization" }?.value }

    @Test func amzDateIsCompactUTC() {
        #expect(SigV4Signer.amzDate(Self.date) == "20130524T000000Z")
        #expect(SigV4Signer.amzDate(Date(timeIntervalSince1970: 1_700_000_000.9)) == "20231114T221320Z")
    }

    @Test func getObjectWithRange() {
        let headers = [
            KeyValue(name: "Range", value: "bytes=0-9"), KeyValue(name: "x-amz-content-sha256", value: Self.empty),
            KeyValue(name: "x-amz-date", value: "20130524T000000Z"),
        ]
        let canonical = SigV4Signer.canonicalRequest(
            method: "GET", url: Self.host + "/test.txt", headers: headers, payloadHash: Self.empty)
        #expect(
            canonical.text == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        let toSign = SigV4Signer.stringToSign(
            canonicalRequest: canonical.text, amzDate: "20130524T000000Z", scope: Self.scope)
        #expect(
            toSign == """
                AWS4-HMAC-SHA256
                20130524T000000Z
                20130524/us-east-1/s3/aws4_request
                7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
                """)
        #expect(
            Self.signer.signature(stringToSign: toSign, day: "20130524")
                == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")

        // The whole chain, as a transfer calls it, gives the published Authorization header (AWS's
        // page joins its fields with ","; uploadd writes ", " as the SDKs do: the signature is the same).
        let signed = Self.signer.sign(
            method: "GET", url: Self.host + "/test.txt", headers: [KeyValue(name: "Range", value: "bytes=0-9")],
            payloadHash: Self.empty, date: Self.date)
        #expect(
            authorization(signed)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
        #expect(signed.contains(KeyValue(name: "x-amz-date", value: "20130524T000000Z")))
        #expect(signed.contains(KeyValue(name: "x-amz-content-sha256", value: Self.empty)))
        #expect(!signed.contains { $0.name.lowercased() == "host" }, "libcurl sends Host from the URL")
    }

    @Test func putObjectWithAnEncodedKeyAndASignedPayload() {
        let payload = Array("Welcome to Amazon S3.".utf8)
        let payloadHash = Hex.encode(Crypto.sha256(payload))
        #expect(payloadHash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let headers = [
            KeyValue(name: "Date", value: "Fri, 24 May 2013 00:00:00 GMT"),
            KeyValue(name: "x-amz-storage-class", value: "REDUCED_REDUNDANCY"),
        ]
        let signed = Self.signer.sign(
            method: "PUT", url: Self.host + "/test$file.text", headers: headers, payloadHash: payloadHash,
            date: Self.date)
        #expect(
            authorization(signed)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        )
        let canonical = SigV4Signer.canonicalRequest(
            method: "PUT", url: Self.host + "/test$file.text",
            headers: signed.filter { $0.name != "Authorization" }, payloadHash: payloadHash)
        #expect(
            canonical.text == """
                PUT
                /test%24file.text

                date:Fri, 24 May 2013 00:00:00 GMT
                host:examplebucket.s3.amazonaws.com
                x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072
                x-amz-date:20130524T000000Z
                x-amz-storage-class:REDUCED_REDUNDANCY

                date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class
                44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072
                """)
        #expect(
            SigV4Signer.stringToSign(canonicalRequest: canonical.text, amzDate: "20130524T000000Z", scope: Self.scope)
                .hasSuffix("\n9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d"))
        // An already encoded key signs the same: nothing is encoded twice.
        let preEncoded = SigV4Signer.canonicalRequest(
            method: "PUT", url: Self.host + "/test%24file.text",
            headers: signed.filter { $0.name != "Authorization" }, payloadHash: payloadHash)
        #expect(preEncoded == canonical)
    }

    @Test func getBucketLifecycleWithABareQueryName() {
        let signed = Self.signer.sign(
            method: "GET", url: Self.host + "/?lifecycle", headers: [], payloadHash: Self.empty, date: Self.date)
        let canonical = SigV4Signer.canonicalRequest(
            method: "GET", url: Self.host + "/?lifecycle", headers: signed.filter { $0.name != "Authorization" },
            payloadHash: Self.empty)
        #expect(canonical.text.hasPrefix("GET\n/\nlifecycle=\nhost:examplebucket.s3.amazonaws.com\n"))
        #expect(
            SigV4Signer.stringToSign(canonicalRequest: canonical.text, amzDate: "20130524T000000Z", scope: Self.scope)
                .hasSuffix("\n9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca"))
        #expect(
            authorization(signed)?.hasSuffix(
                "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
            )
                == true)
    }

    /// botocore, the AWS SDKs and `curl --aws-sigv4` write `Credential=…, SignedHeaders=…,
    /// Signature=…`; some S3 servers split the header on ", " and refuse a bare "," (issue 48).
    @Test func theFieldsAreSeparatedByCommaSpaceAsTheSDKsWriteThem() throws {
        let signed = Self.signer.sign(
            method: "PUT", url: Self.host + "/k", headers: [], payloadHash: Self.empty, date: Self.date)
        let value = try #require(authorization(signed))
        #expect(value.hasPrefix("AWS4-HMAC-SHA256 Credential="))
        let fields = value.dropFirst("AWS4-HMAC-SHA256 ".count).components(separatedBy: ", ")
        #expect(fields.map { $0.prefix { $0 != "=" } } == ["Credential", "SignedHeaders", "Signature"], "\(value)")
        #expect(fields.allSatisfy { !$0.contains(",") && !$0.contains(" ") }, "\(value)")
    }

    @Test func listObjectsSortsTheQuery() {
        // The URL names max-keys after prefix; the canonical query sorts them.
        let url = Self.host + "/?prefix=J&max-keys=2"
        let signed = Self.signer.sign(method: "GET", url: url, headers: [], payloadHash: Self.empty, date: Self.date)
        let canonical = SigV4Signer.canonicalRequest(
            method: "GET", url: url, headers: signed.filter { $0.name != "Authorization" }, payloadHash: Self.empty)
        #expect(canonical.text.hasPrefix("GET\n/\nmax-keys=2&prefix=J\n"))
        #expect(
            SigV4Signer.stringToSign(canonicalRequest: canonical.text, amzDate: "20130524T000000Z", scope: Self.scope)
                .hasSuffix("\ndf57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7"))
        #expect(
            authorization(signed)?.hasSuffix(
                "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }
}

@Suite("SigV4: encoding and headers")
struct SigV4EncodingTests {
    @Test(arguments: [
        ("a b", false, "a%20b"), ("a+b", false, "a%2Bb"), ("100%", false, "100%25"), ("A-z_0.9~", true, "A-z_0.9~"),
        ("a/b", false, "a/b"), ("a/b", true, "a%2Fb"), ("=&?#", true, "%3D%26%3F%23"),
        ("ключ", false, "%D0%BA%D0%BB%D1%8E%D1%87"), ("a!b'c(d)e*", true, "a%21b%27c%28d%29e%2A"),
    ])
    func uriEncodeKeepsOnlyUnreservedCharacters(input: String, encodeSlash: Bool, expected: String) {
        #expect(SigV4Signer.uriEncode(input, encodeSlash: encodeSlash) == expected)
    }

    @Test func canonicalURIEncodesEachSegmentOnce() {
        #expect(SigV4Signer.canonicalURI("/bucket/dir/my file.txt") == "/bucket/dir/my%20file.txt")
        #expect(SigV4Signer.canonicalURI("/bucket/dir/my%20file.txt") == "/bucket/dir/my%20file.txt")
        // An encoded slash inside a key segment stays one segment.
        #expect(SigV4Signer.canonicalURI("/bucket/a%2Fb") == "/bucket/a%2Fb")
        #expect(SigV4Signer.canonicalURI("/bucket//double") == "/bucket//double")
        #expect(SigV4Signer.canonicalURI("") == "/")
    }

    @Test func canonicalQuerySortsAndEncodes() {
        #expect(SigV4Signer.canonicalQuery("") == "")
        #expect(SigV4Signer.canonicalQuery("uploads") == "uploads=")
        #expect(
            SigV4Signer.canonicalQuery("uploadId=a%2Fb&partNumber=10&part-number-marker=")
                == "part-number-marker=&partNumber=10&uploadId=a%2Fb")
        #expect(SigV4Signer.canonicalQuery("b=2&a=x%20y&a=%2B") == "a=%2B&a=x%20y&b=2")
    }

    @Test func headerValuesAreTrimmedAndFolded() {
        let canonical = SigV4Signer.canonicalRequest(
            method: "PUT", url: "http://127.0.0.1:8333/b/k",
            headers: [
                KeyValue(name: "X-Amz-Meta-Note", value: "  two   spaces  "), KeyValue(name: "User-Agent", value: "x"),
            ],
            payloadHash: SigV4Signer.unsignedPayload)
        #expect(canonical.text.contains("\nhost:127.0.0.1:8333\nx-amz-meta-note:two spaces\n"))
        #expect(canonical.signedHeaders == "host;x-amz-meta-note", "User-Agent is libcurl's to set")
        #expect(canonical.text.hasSuffix("\nUNSIGNED-PAYLOAD"))
    }

    @Test func aSessionTokenIsSentAndSigned() {
        var signer = SigV4ExampleTests.signer
        signer.sessionToken = "token/with+chars"
        let signed = signer.sign(
            method: "GET", url: "https://b.s3.amazonaws.com/k", headers: [], payloadHash: SigV4Signer.emptyPayloadHash,
            date: SigV4ExampleTests.date)
        #expect(signed.contains(KeyValue(name: "x-amz-security-token", value: "token/with+chars")))
        let authorization = signed.first { $0.name == "Authorization" }?.value ?? ""
        #expect(authorization.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "))
        let withoutToken = SigV4ExampleTests.signer.sign(
            method: "GET", url: "https://b.s3.amazonaws.com/k", headers: [], payloadHash: SigV4Signer.emptyPayloadHash,
            date: SigV4ExampleTests.date)
        #expect(!withoutToken.contains { $0.name == "x-amz-security-token" })
    }

    @Test func urlPartsSplitWithoutDecoding() {
        let parts = URLParts("http://Host:9000/b/a%20b?uploadId=x%2Fy#frag")
        #expect(parts == URLParts(scheme: "http", authority: "Host:9000", path: "/b/a%20b", query: "uploadId=x%2Fy"))
        #expect(URLParts("https://h").path == "/")
        #expect(URLParts("https://h?x=1").query == "x=1")
    }
}

@Suite("SigV4: libcrypto digests")
struct SigV4CryptoTests {
    @Test func sha256KnownAnswers() {
        #expect(Hex.encode(Crypto.sha256([UInt8]())) == SigV4Signer.emptyPayloadHash)
        #expect(
            Hex.encode(Crypto.sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func streamingSHA256MatchesOneShot() {
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let hasher = MessageDigest.sha256()
        bytes.withUnsafeBytes { buffer in
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<1]))
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[1..<65_536]))
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[65_536...]))
        }
        #expect(hasher.finish() == Crypto.sha256(bytes))
    }

    @Test func hmacSHA256RFC4231() {
        // RFC 4231 test case 2.
        #expect(
            Hex.encode(Crypto.hmacSHA256(key: Array("Jefe".utf8), "what do ya want for nothing?"))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(Crypto.hmacSHA256(key: [UInt8](), data: [UInt8]()).count == 32)
    }

    @Test func crc32cTravelsAsBigEndianBase64() {
        #expect(Base64.encodeBigEndian(0xE306_9283) == "4waSgw==")  // CRC32C("123456789")
        #expect(Base64.encodeBigEndian(0) == "AAAAAA==")
    }
}
