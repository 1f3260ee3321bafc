import Foundation

/// SeaweedFS's S3 gateway as contrib/test/servers.py started it, and a small signed client to check
/// what it holds.
///
/// The client is a few lines of Python standard library run with `python3 -c`: the test target does
/// not link the daemon's signer (testing the signer with itself would prove little), and SeaweedFS
/// checks signatures on reads too.
struct S3TestServer: Sendable {
    var endpoint: String
    var bucket: String
    var accessKey: String
    var secretKey: String
    var region: String

    /// Nil unless every UPLOADD_TEST_S3_* value is set.
    init?(_ values: [String: String]) {
        func value(_ key: String) -> String? { values[key].flatMap { $0.isEmpty ? nil : $0 } }
        guard let endpoint = value("UPLOADD_TEST_S3_ENDPOINT"), let bucket = value("UPLOADD_TEST_S3_BUCKET"),
            let accessKey = value("UPLOADD_TEST_S3_ACCESS_KEY"), let secretKey = value("UPLOADD_TEST_S3_SECRET_KEY")
        else { return nil }
        self.endpoint = endpoint
        self.bucket = bucket
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.region = value("UPLOADD_TEST_S3_REGION") ?? "us-east-1"
    }

    /// SHA-256 of the stored object, or nil when the server does not have it.
    func sha256(of key: String) throws -> String? {
        let words = try run("sha256", key).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")
        return words.first == "200" && words.count == 2 ? String(words[1]) : nil
    }

    /// The HTTP status of a HEAD of the object.
    func status(of key: String) throws -> Int {
        Int(try run("status", key).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Multipart uploads in progress whose key starts with `prefix` (ListMultipartUploads).
    func uploads(prefix: String) throws -> [(key: String, uploadID: String)] {
        try run("uploads", prefix).split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ", maxSplits: 1)
            return words.count == 2 ? (String(words[0]), String(words[1])) : nil
        }
    }

    /// How many parts the server holds of an upload (ListParts).
    func partCount(key: String, uploadID: String) throws -> Int {
        Int(try run("parts", key, uploadID).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// AbortMultipartUpload, as if the server had expired the upload.
    func abort(key: String, uploadID: String) throws {
        _ = try run("abort", key, uploadID)
    }

    private func run(_ arguments: String...) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["S3_ENDPOINT"] = endpoint
        environment["S3_BUCKET"] = bucket
        environment["S3_ACCESS_KEY"] = accessKey
        environment["S3_SECRET_KEY"] = secretKey
        environment["S3_REGION"] = region
        let result = try Command.run("/usr/bin/python3", ["-c", Self.script] + arguments, environment: environment)
        guard result.status == 0 else { throw TestFailure("the S3 test client failed: \(result)") }
        return result.stdout
    }

    private static let script = #"""
        import datetime, hashlib, hmac, os, re, sys, urllib.error, urllib.parse, urllib.request
        E, B, AK, SK, R = (os.environ[k] for k in ("S3_ENDPOINT", "S3_BUCKET", "S3_ACCESS_KEY", "S3_SECRET_KEY", "S3_REGION"))
        def q(s, safe="-_.~"):
            return urllib.parse.quote(s, safe=safe)
        def request(method, key="", query=()):
            path = "/" + B + ("/" + q(key, "-_.~/") if key else "")
            cq = "&".join(q(k) + "=" + q(v) for k, v in sorted(query))
            now = datetime.datetime.now(datetime.timezone.utc)
            amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
            ph = hashlib.sha256(b"").hexdigest()
            h = {"host": urllib.parse.urlsplit(E).netloc, "x-amz-content-sha256": ph, "x-amz-date": amz}
            names = sorted(h)
            creq = "\n".join([method, path, cq, "".join(n + ":" + h[n] + "\n" for n in names), ";".join(names), ph])
            scope = day + "/" + R + "/s3/aws4_request"
            sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(creq.encode()).hexdigest()])
            k = ("AWS4" + SK).encode()
            for part in (day, R, "s3", "aws4_request"):
                k = hmac.new(k, part.encode(), hashlib.sha256).digest()
            sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
            h["authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (AK, scope, ";".join(names), sig)
            url = E.rstrip("/") + path + ("?" + cq if cq else "")
            try:
                return urllib.request.urlopen(urllib.request.Request(url, method=method, headers=h), timeout=120)
            except urllib.error.HTTPError as error:
                return error
        op = sys.argv[1]
        if op == "sha256":
            r = request("GET", sys.argv[2])
            if r.getcode() != 200:
                print(r.getcode())
            else:
                d = hashlib.sha256()
                while True:
                    chunk = r.read(1 << 20)
                    if not chunk:
                        break
                    d.update(chunk)
                print(200, d.hexdigest())
        elif op == "status":
            print(request("HEAD", sys.argv[2]).getcode())
        elif op == "uploads":
            body = request("GET", "", [("uploads", ""), ("prefix", sys.argv[2])]).read().decode()
            for upload in re.findall(r"<Upload>(.*?)</Upload>", body, re.S):
                print(re.search(r"<Key>(.*?)</Key>", upload).group(1), re.search(r"<UploadId>(.*?)</UploadId>", upload).group(1))
        elif op == "parts":
            body = request("GET", sys.argv[2], [("uploadId", sys.argv[3])]).read().decode()
            print(len(re.findall(r"<Part>", body)))
        elif op == "abort":
            print(request("DELETE", sys.argv[2], [("uploadId", sys.argv[3])]).getcode())
        """#
}
