import Testing

@testable import UploadCore

@Suite("INIDocument parsing")
struct INIDocumentTests {
    @Test func sectionsKeysRepeatsAndComments() throws {
        let text = """
            # uploadd.conf
            ; another comment

            [daemon]
            transfers = 3
            Retry_Attempts=5

            [remote nas]
            url = https://nas.local/dav/
            header = X-A: 1
            header = X-B: 2
              # indented comment
            field = "quoted value"
            [Remote "with-quotes"]
            url=s3://b/
            """
        let document = try INIDocument(parsing: text)
        #expect(document.sections.count == 3)
        let daemon = document.sections[0]
        #expect(daemon.kind == "daemon")
        #expect(daemon.name == nil)
        #expect(daemon.line == 4)
        #expect(daemon.value("transfers") == "3")
        #expect(daemon.value("retry_attempts") == "5", "keys are lowercased")
        #expect(daemon.entries.map(\.line) == [5, 6])

        let nas = document.sections[1]
        #expect(nas.kind == "remote")
        #expect(nas.name == "nas")
        #expect(nas.values("header") == ["X-A: 1", "X-B: 2"])
        #expect(nas.value("header") == "X-B: 2", "the last value wins for single-valued keys")
        #expect(nas.value("field") == "quoted value")
        #expect(nas.value("missing") == nil)

        let quoted = document.sections[2]
        #expect(quoted.kind == "remote")
        #expect(quoted.name == "with-quotes")
        #expect(quoted.value("url") == "s3://b/")
    }

    @Test func valuesMayContainEqualsAndHashes() throws {
        let document = try INIDocument(parsing: "[remote x]\nurl = https://h/?a=b#frag\n")
        #expect(document.sections[0].value("url") == "https://h/?a=b#frag")
    }

    /// "\r\n" is one Character in Swift, so splitting on the Character "\n" does not split it.
    @Test func crlfLineEndings() throws {
        let document = try INIDocument(parsing: "[daemon]\r\ntransfers = 4\r\n\r\n[remote a]\r\nurl = x\r\n")
        #expect(document.sections.count == 2)
        #expect(document.sections.first?.value("transfers") == "4")
        #expect(document.sections.last?.line == 4)
    }

    @Test func emptyDocument() throws {
        #expect(try INIDocument(parsing: "").sections.isEmpty)
        #expect(try INIDocument(parsing: "# only\n\n; comments\n").sections.isEmpty)
    }

    @Test(arguments: [
        ("[daemon]\ntransfers 3\n", 2, "expected key = value"),
        ("[daemon\n", 1, "section header"),
        ("\n\n[]\n", 3, "section header"),
        ("[remote a b]\n", 1, "section header"),
        ("transfers = 3\n", 1, "before any [section]"),
        ("[daemon]\n\n = 3\n", 3, "key is missing"),
    ])
    func errorsCarryTheirLineNumber(text: String, line: Int, message: String) {
        let error = #expect(throws: INIDocument.ParseError.self) { try INIDocument(parsing: text) }
        #expect(error?.line == line)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.description.hasPrefix("line \(line): ") == true)
    }
}
