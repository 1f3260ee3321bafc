import Foundation
import TestSupport
import Testing

@testable import UploadDaemon

/// contrib/man/uploadd.conf.5 against `DaemonConfig`'s key lists, so that the page cannot drift
/// from the parser.
@Suite struct ConfigManPageTests {
    private let daemonItems: [(tag: String, body: String)]
    private let remoteItems: [(tag: String, body: String)]
    private let folderItems: [(tag: String, body: String)]
    private let page: ManPageSource

    init() throws {
        page = try ManPageSource("contrib/man/uploadd.conf.5")
        daemonItems = ManPageSource.items(page.section("DAEMON SECTION"))
        remoteItems = ManPageSource.items(page.section("REMOTE SECTIONS"))
        folderItems = ManPageSource.items(page.section("FOLDER SECTIONS"))
    }

    private func keys(_ items: [(tag: String, body: String)]) -> [String] {
        items.flatMap { ManPageSource.boldWords($0.tag, beforeEquals: true) }
    }

    @Test func everyDaemonKeyIsDocumentedOnce() {
        let documented = keys(daemonItems)
        for key in DaemonConfig.daemonKeys {
            #expect(documented.filter { $0 == key }.count == 1, "[daemon] \(key) in uploadd.conf.5")
        }
        #expect(!documented.isEmpty)
        for key in documented {
            #expect(DaemonConfig.daemonKeys.contains(key), "uploadd.conf.5 documents [daemon] \(key); it is no key")
        }
    }

    @Test func everyRemoteKeyIsDocumentedOnce() {
        let documented = keys(remoteItems)
        for key in DaemonConfig.remoteKeys {
            #expect(documented.filter { $0 == key }.count == 1, "[remote] \(key) in uploadd.conf.5")
        }
        #expect(!documented.isEmpty)
        for key in documented {
            #expect(DaemonConfig.remoteKeys.contains(key), "uploadd.conf.5 documents [remote] \(key); it is no key")
        }
    }

    @Test func everyFolderKeyIsDocumentedOnce() {
        let documented = keys(folderItems)
        for key in FolderRule.keys {
            #expect(documented.filter { $0 == key }.count == 1, "[folder] \(key) in uploadd.conf.5")
        }
        for key in documented {
            #expect(FolderRule.keys.contains(key), "uploadd.conf.5 documents [folder] \(key); it is no key")
        }
    }

    /// "1 to 64": both ends are accepted, and one past either end is refused.
    @Test func theRangesOfDaemonKeysAreTheParsers() throws {
        var checked = 0
        for item in daemonItems {
            guard let range = item.body.firstMatch(of: /(\d+) to (\d+)/), let low = Int(range.1),
                let high = Int(range.2)
            else { continue }
            for key in ManPageSource.boldWords(item.tag, beforeEquals: true) {
                func parses(_ value: Int) -> Bool { (try? DaemonConfig.parse("[daemon]\n\(key) = \(value)")) != nil }
                #expect(parses(low) && parses(high), "\(key): \(low) to \(high) are not both accepted")
                #expect(!parses(low - 1) && !parses(high + 1), "\(key) accepts more than \(low) to \(high)")
                checked += 1
            }
        }
        #expect(checked >= 10)
    }

    @Test func theExampleIsAValidConfig() throws {
        let text = ManPageSource.example(page.section("EXAMPLES"))
        #expect(text.contains("[remote") && text.contains("[folder"))
        let config = try DaemonConfig.parse(text)
        #expect(config.warnings.isEmpty)
    }
}

/// contrib/man/uploadd.8 against `DaemonOptions`, and `uploadd --help`'s examples.
@Suite struct DaemonManPageTests {
    /// The options of `DaemonOptions.usage`'s Options list: the dashed words before each line's gap.
    private static var usageOptions: [String] {
        guard let start = DaemonOptions.usage.range(of: "Options:\n") else { return [] }
        let block = DaemonOptions.usage[start.upperBound...].components(separatedBy: "\n\n")[0]
        return block.split(separator: "\n").flatMap { line -> [String] in
            let first = line.trimmingCharacters(in: .whitespaces).components(separatedBy: "  ")[0]
            return first.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) }
                .filter { $0.hasPrefix("-") }
        }
    }

    private func documentedOptions() throws -> [String] {
        let page = try ManPageSource("contrib/man/uploadd.8")
        return ManPageSource.items(page.section("OPTIONS")).flatMap { ManPageSource.boldWords($0.tag) }
    }

    @Test func everyOptionOfTheUsageIsDocumented() throws {
        let documented = try documentedOptions()
        #expect(Self.usageOptions.count >= 8)
        for option in Self.usageOptions {
            #expect(documented.contains(option), "uploadd.8 does not document \(option)")
        }
    }

    /// An option the page names must be one `DaemonOptions.parse` knows: its error, if any, is
    /// about the value, never "unknown option".
    @Test func everyDocumentedOptionIsTakenByTheDaemon() throws {
        let documented = try documentedOptions()
        #expect(!documented.isEmpty)
        for option in documented {
            do {
                _ = try DaemonOptions.parse([option, "x"], environment: ["HOME": "/home/u"])
            } catch {
                #expect(!error.message.hasPrefix("unknown option '\(option)'"), "uploadd does not take \(option)")
            }
        }
    }

    @Test func theHelpEndsWithExamplesThatParse() throws {
        let usage = DaemonOptions.usage
        let start = try #require(usage.range(of: "\nExamples:\n"))
        let examples = usage[start.upperBound...].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.hasPrefix("#") }
        #expect((2...3).contains(examples.count))
        #expect(examples.contains { $0.hasPrefix("uploadd --check-config") })
        for example in examples {
            let command = example.components(separatedBy: " && ")[0].split(separator: " ").map(String.init)
            #expect(command.first == "uploadd")
            do {
                _ = try DaemonOptions.parse(Array(command.dropFirst()), environment: ["HOME": "/home/u"])
            } catch {
                Issue.record("'\(example)': \(error)")
            }
        }
    }
}
