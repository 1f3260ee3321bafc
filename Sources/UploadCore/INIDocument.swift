import Foundation
import UploadWire

/// A parsed INI file: `[section]` or `[section name]` headers, `key = value` lines, `#` and `;`
/// comments. Keys may repeat (a remote's `header` and `field`); order is kept.
public struct INIDocument: Sendable, Equatable {
    public struct Section: Sendable, Equatable {
        /// `daemon` for `[daemon]`, `remote` for `[remote NAME]`.
        public var kind: String
        /// `NAME` for `[remote NAME]`, nil for `[daemon]`.
        public var name: String?
        public var entries: [(key: String, value: String, line: Int)]
        public var line: Int

        public func values(_ key: String) -> [String] { entries.filter { $0.key == key }.map(\.value) }
        public func value(_ key: String) -> String? { entries.last(where: { $0.key == key })?.value }

        public static func == (lhs: Section, rhs: Section) -> Bool {
            lhs.kind == rhs.kind && lhs.name == rhs.name && lhs.line == rhs.line
                && lhs.entries.map { "\($0.key)=\($0.value)@\($0.line)" }
                    == rhs.entries.map { "\($0.key)=\($0.value)@\($0.line)" }
        }
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    public var sections: [Section]

    /// The document, or the first line it cannot read (`init(parsing:problems:)` finds them all).
    public init(parsing text: String) throws(ParseError) {
        var problems: [ParseError] = []
        self.init(parsing: text, problems: &problems)
        if let first = problems.first { throw first }
    }

    /// The document without the lines it cannot read, each of which is added to `problems`: a
    /// check of the file reports every mistake at once, not one per edit.
    public init(parsing text: String, problems: inout [ParseError]) {
        var sections: [Section] = []
        var lineNumber = 0
        /// After a header that cannot be read, its lines belong to no section: they are skipped,
        /// not reported as coming before any section or put in the section before.
        var inUnreadableSection = false
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            func problem(_ message: String) { problems.append(ParseError(line: lineNumber, message: message)) }
            if line.hasPrefix("[") {
                let inner = line.dropFirst().dropLast().trimmingCharacters(in: .whitespacesAndNewlines)
                let words = inner.split(separator: " ", omittingEmptySubsequences: true)
                guard line.hasSuffix("]"), line.count > 2, words.count == 1 || words.count == 2 else {
                    problem("a section header looks like [daemon], [remote NAME] or [folder NAME]")
                    inUnreadableSection = true
                    continue
                }
                inUnreadableSection = false
                var name = words.count == 2 ? String(words[1]) : nil
                if let quoted = name, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                    name = String(quoted.dropFirst().dropLast())
                }
                sections.append(Section(kind: String(words[0]).lowercased(), name: name, entries: [], line: lineNumber))
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                problem("expected key = value, a [section], or a # comment")
                continue
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespacesAndNewlines)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            guard !key.isEmpty else {
                problem("a key is missing before '='")
                continue
            }
            if inUnreadableSection { continue }
            guard !sections.isEmpty else {
                problem("'\(key)' comes before any [section]")
                continue
            }
            sections[sections.count - 1].entries.append((key, value, lineNumber))
        }
        self.sections = sections
    }
}
