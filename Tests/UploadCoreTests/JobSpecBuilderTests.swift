import Testing
import UploadWire

@testable import UploadCore

@Suite("JobSpecBuilder: job.add params to a JobSpec")
struct JobSpecBuilderTests {
    func params(
        _ destination: String = "https://h/dir/", source: String = "/data/a.bin",
        configure: (inout AddParams) -> Void = { _ in }
    ) -> AddParams {
        var params = AddParams(source: source, destination: destination)
        configure(&params)
        return params
    }

    func failure(_ params: AddParams) -> RPCError? {
        let error = #expect(throws: RPCError.self) { try JobSpecBuilder.build(params) }
        #expect(error?.code == RPCError.invalidParamsCode)
        return error
    }

    @Test func carriesEveryOption() throws {
        let spec = try JobSpecBuilder.build(
            params("nas:videos/") {
                $0.protocol = .put
                $0.headers = ["X-A: 1", "X-B: two"]
                $0.fields = ["k=v"]
                $0.user = "alice:pw"
                $0.chunkSize = "8M"
                $0.priority = 5
                $0.snapshot = SnapshotMode.none
                $0.clientToken = "t-1"
                $0.metadata = ["m": "n"]
            })
        #expect(spec.source == "/data/a.bin")
        #expect(spec.destination == "nas:videos/")
        #expect(spec.uploadProtocol == .put)
        #expect(spec.headers == [KeyValue(name: "X-A", value: "1"), KeyValue(name: "X-B", value: "two")])
        #expect(spec.fields == [KeyValue(name: "k", value: "v")])
        #expect(spec.user == "alice:pw")
        #expect(spec.userName == "alice")
        #expect(spec.chunkSize == 8 << 20)
        #expect(spec.priority == 5)
        #expect(spec.snapshot == SnapshotMode.none)
        #expect(spec.clientToken == "t-1")
        #expect(spec.metadata == ["m": "n"])
    }

    @Test func theFileFieldIsCarriedAndChecked() throws {
        #expect(try JobSpecBuilder.build(params { $0.fileField = "userfile" }).fileField == "userfile")
        #expect(try JobSpecBuilder.build(params()).fileField == nil)
        for bad in ["", "a\"b", "a\r\nb", String(repeating: "x", count: 257)] {
            #expect(failure(params { $0.fileField = bad })?.message.contains("file_field") == true)
        }
    }

    @Test func defaults() throws {
        let spec = try JobSpecBuilder.build(params())
        #expect(spec.uploadProtocol == .auto)
        #expect(spec.priority == 0)
        #expect(spec.snapshot == .auto)
        #expect(spec.chunkSize == nil)
        #expect(spec.headers.isEmpty)
    }

    @Test func relativeSourceIsRefused() {
        #expect(failure(params(source: "a.bin"))?.message.contains("absolute path") == true)
    }

    @Test func nulInSourceIsRefused() {
        #expect(failure(params(source: "/a\0b"))?.message.contains("NUL") == true)
    }

    @Test func badDestinationSaysWhy() {
        let message = failure(params("ftp//nowhere"))?.message ?? ""
        #expect(message.contains("bad destination 'ftp//nowhere'"))
    }

    @Test(arguments: [
        (UploadProtocol.file, "https://h/x"), (.s3, "file:///tmp/"), (.put, "s3://b/k"), (.post, "file:///tmp/"),
        (.tus, "s3://b/"), (.chunked, "file:///x/"), (.file, "s3://b/"),
    ])
    func protocolDestinationMismatch(uploadProtocol: UploadProtocol, destination: String) {
        let message = failure(params(destination) { $0.protocol = uploadProtocol })?.message ?? ""
        #expect(message.contains("protocol \(uploadProtocol.rawValue) cannot upload to this destination"))
    }

    @Test(arguments: [
        (UploadProtocol.put, "https://h/"), (.post, "http://h/"), (.tus, "https://h/"), (.chunked, "https://h/"),
        (.s3, "s3://b/"), (.file, "file:///tmp/"), (.tus, "nas:x"), (.auto, "s3://b/"),
    ])
    func protocolDestinationMatch(uploadProtocol: UploadProtocol, destination: String) throws {
        #expect(
            try JobSpecBuilder.build(params(destination) { $0.protocol = uploadProtocol }).uploadProtocol
                == uploadProtocol)
    }

    @Test func badHeaderIsNamed() {
        #expect(failure(params { $0.headers = ["X-Ok: 1", "NoColon"] })?.message.contains("header 'NoColon'") == true)
    }

    @Test func headerWithCRLFIsRefused() {
        #expect(failure(params { $0.headers = ["X-Note: a\r\nAuthorization: Bearer stolen"] }) != nil)
    }

    /// Headers that frame the request or manage the connection are uploadd's own: one of the
    /// user's would send a body the server does not read, or the credentials to another host.
    @Test(arguments: [
        "Content-Length: 0", "transfer-encoding: chunked", "HOST: evil.example", "Connection: close", "TE: trailers",
        "Trailer: X", "Upgrade: h2c", "Keep-Alive: 5", "Proxy-Connection: keep-alive", "Expect: 100-continue",
    ])
    func framingHeadersAreRefused(header: String) {
        let message = failure(params { $0.headers = ["X-Ok: 1", header] })?.message ?? "accepted"
        let name = String(header.prefix { $0 != ":" })
        #expect(message.contains("\(name) cannot be set: uploadd"), "\(message)")
    }

    @Test func badFieldIsNamed() {
        #expect(failure(params { $0.fields = ["=v"] })?.message.contains("field '=v'") == true)
    }

    @Test(
        arguments: [
            ("lots", "chunk_size: 'lots' is not a chunk size"), ("0", "use 1 byte to 5G"), ("-5", "chunk_size"),
            ("9223372036854774784", "use 1 byte to 5G"), ("5G", nil), ("6G", "use 1 byte to 5G"),
        ] as [(String, String?)])
    func chunkSizeBounds(text: String, message: String?) {
        guard let message else {
            #expect(throws: Never.self) { try JobSpecBuilder.build(params { $0.chunkSize = text }) }
            return
        }
        #expect(failure(params { $0.chunkSize = text })?.message.contains(message) == true)
    }

    @Test(arguments: [-1001, 1001])
    func priorityOutOfRange(priority: Int) {
        #expect(failure(params { $0.priority = priority })?.message.contains("priority") == true)
    }

    /// `image` is the image preparation step, with its SPEC as given; the daemon checks both.
    @Test func imageBecomesThePreparationStep() throws {
        let spec = try JobSpecBuilder.build(params { $0.image = "max=1024" })
        #expect(spec.preparation == [PreparationRequest(step: "image", options: "max=1024")])
        #expect(try JobSpecBuilder.build(params()).preparation.isEmpty)
    }
}
