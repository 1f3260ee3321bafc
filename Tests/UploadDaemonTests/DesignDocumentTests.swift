import Foundation
import TestSupport
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadPlatform

/// contrib/DESIGN.md against the code, where the code can say: its modules, threads and queues,
/// protocols, journal format and config keys. A design that names what no longer exists (five
/// files once cited a DESIGN.md that was in no tree) misleads whoever reads it first.
@Suite struct DesignDocumentTests {
    private let text: String

    init() throws {
        text = try String(contentsOf: repositoryRoot.appendingPathComponent("contrib/DESIGN.md"), encoding: .utf8)
    }

    /// The first column's backticked names of the table under `heading` (up to the next heading).
    private func firstColumn(under heading: String) -> [String] {
        guard let start = text.range(of: heading + "\n") else { return [] }
        var names: [String] = []
        for line in text[start.upperBound...].split(separator: "\n") {
            if line.hasPrefix("#") { break }
            guard line.hasPrefix("| "), !line.hasPrefix("|---") else { continue }
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            names += Self.backticked(String(cell))
        }
        return names
    }

    private static func backticked(_ text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }
            .map { String($0.element) }
    }

    private static func sources(under folder: String) throws -> String {
        let root = repositoryRoot.appendingPathComponent(folder)
        var text = ""
        for case let url as URL in FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)!
        where url.pathExtension == "swift" {
            text += try String(contentsOf: url, encoding: .utf8)
        }
        return text
    }

    @Test func theModuleMapNamesEveryTargetOfThePackageAndNoOther() throws {
        let manifest = try String(contentsOf: repositoryRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let targets = Set(
            manifest.matches(of: /\.(?:target|systemLibrary|executableTarget)\(\s*name: "([^"]+)"/).map {
                String($0.output.1)
            }
        ).subtracting(["TestSupport", "uploadd-example-queue-folder"])
        let documented = Set(firstColumn(under: "## Modules, and who may import whom"))
        #expect(!targets.isEmpty)
        #expect(
            documented == targets,
            "DESIGN.md: \(documented.subtracting(targets)) not in Package.swift; \(targets.subtracting(documented)) missing"
        )
    }

    @Test func theFolderTableNamesEveryFolderOfTheDaemon() throws {
        let root = repositoryRoot.appendingPathComponent("Sources/UploadDaemon")
        let folders = Set(
            try FileManager.default.contentsOfDirectory(atPath: root.path).filter { name in
                var isFolder: ObjCBool = false
                return FileManager.default.fileExists(
                    atPath: root.appendingPathComponent(name).path, isDirectory: &isFolder)
                    && isFolder.boolValue
            })
        let documented = Set(
            firstColumn(under: "### The folders of UploadDaemon").map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        )
        #expect(folders.count >= 10)
        #expect(
            documented == folders,
            "DESIGN.md: \(documented.subtracting(folders)) not in Sources/UploadDaemon; \(folders.subtracting(documented)) missing"
        )
    }

    @Test func everyThreadAndQueueOfTheDaemonIsInTheTable() throws {
        let code = try ["UploadDaemon", "UploadPlatform", "UploadHTTP"].map { try Self.sources(under: "Sources/\($0)") }
            .joined()
        let named = Set(
            code.matches(of: /(?:NamedThread\.start|DispatchQueue)\((?:label: )?"([^"]+)"/).map { String($0.output.1) })
        let documented = Set(firstColumn(under: "## Threads and queues").filter { $0.hasPrefix("uploadd") })
        #expect(named.count >= 5)
        #expect(
            documented == named,
            "DESIGN.md: \(documented.subtracting(named)) in no code; \(named.subtracting(documented)) missing")
    }

    @Test func theProtocolTableIsTheProtocolsUploaddHas() {
        let documented = Set(firstColumn(under: "## Protocols"))
        let protocols = Set(UploadProtocol.allCases.filter { $0 != .auto }.map(\.rawValue))
        #expect(documented == protocols)
        #expect(Set(TransferRegistry.supportedProtocols.map(\.rawValue)) == protocols)
    }

    @Test func theCurrentJournalFormatIsTheCodes() {
        #expect(text.contains("| \(JournalFormat.version) | current |"), "DESIGN.md's current format")
        for version in 1..<JournalFormat.version {
            #expect(text.contains("| \(version) |"), "format \(version) in DESIGN.md's table")
        }
    }

    /// Every config key the page names is one (a snake_case name in backticks), but for the few
    /// names of other things it uses.
    @Test func everyConfigKeyNamedIsAKey() {
        let others: Set<String> = ["matrix_entry", "preparation_steps"]
        let named = Set(Self.backticked(text).filter { $0.wholeMatch(of: /[a-z][a-z0-9]*(_[a-z0-9]+)+/) != nil })
        let keys = Set(DaemonConfig.daemonKeys + DaemonConfig.remoteKeys)
        #expect(
            named.subtracting(others).subtracting(keys).isEmpty,
            "not config keys: \(named.subtracting(others).subtracting(keys))")
    }
}
