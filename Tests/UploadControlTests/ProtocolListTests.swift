import Foundation
import TestSupport
import Testing
import UploadWire

/// The lists of protocols written by hand outside the code (the shell completions, the Python
/// client's docstring, uploadctl(1)) against `UploadProtocol`: a protocol added to the registry
/// and forgotten in one of them fails here.
@Suite struct ProtocolListTests {
    static let names = UploadProtocol.allCases.map(\.rawValue)

    private func read(_ path: String) throws -> String {
        try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The words of the first line of `path` that contains `marker`, after it, up to `end`.
    private func words(in path: String, after marker: String, upTo end: Character) throws -> [String] {
        let text = try read(path)
        guard let line = text.split(separator: "\n").first(where: { $0.contains(marker) }),
            let start = line.range(of: marker)
        else { return [] }
        return line[start.upperBound...].prefix { $0 != end }.split(whereSeparator: { " ,".contains($0) }).map(
            String.init)
    }

    @Test func theShellCompletionsOfferEveryProtocol() throws {
        #expect(
            try words(in: "contrib/completions/uploadctl.bash", after: "_uploadctl_protocols=\"", upTo: "\"")
                == Self.names)
        #expect(try words(in: "contrib/completions/_uploadctl", after: ":protocol:(", upTo: ")") == Self.names)
        #expect(
            try words(in: "contrib/completions/uploadctl.fish", after: "set -l protocols ", upTo: "\n") == Self.names)
    }

    @Test func thePythonClientNamesEveryProtocol() throws {
        let listed = try words(in: "contrib/python/uploadd_client.py", after: "* ``protocol``: ", upTo: ".")
            .filter { $0 != "or" && $0 != "(default)" }
        #expect(listed == Self.names)
    }

    @Test func uploadctlsManPageNamesEveryProtocol() throws {
        let page = try ManPageSource("contrib/man/uploadctl.1")
        guard let start = page.lines.firstIndex(where: { $0.hasPrefix("\\fB\\-\\-protocol\\fR") }),
            let end = page.lines[(start + 1)...].firstIndex(where: { $0 == ".TP" })
        else {
            Issue.record("uploadctl.1 has no --protocol item")
            return
        }
        let bold = page.lines[start..<end].compactMap { line -> String? in
            guard line.hasPrefix(".B ") || line.hasPrefix(".BR ") else { return nil }
            return line.split(separator: " ").dropFirst().first.map(String.init)
        }
        for name in Self.names { #expect(bold.contains(name), "uploadctl.1's --protocol names \(name)") }
    }
}
