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

    public init(parsing text: String) throws(ParseError) {
        var sections: [Section] = []
        var lineNumber = 0
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else {
                    throw ParseError(line: lineNumber, message: "a section header looks like [daemon] or [remote NAME]")
                }
                let inner = line.dropFirst().dropLast().trimmingCharacters(in: .whitespacesAndNewlines)
                let words = inner.split(separator: " ", omittingEmptySubsequences: true)
                guard words.count == 1 || words.count == 2 else {
                    throw ParseError(line: lineNumber, message: "a section header looks like [daemon] or [remote NAME]")
                }
                var name = words.count == 2 ? String(words[1]) : nil
                if let quoted = name, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                    name = String(quoted.dropFirst().dropLast())
                }
                sections.append(Section(kind: String(words[0]).lowercased(), name: name, entries: [], line: lineNumber))
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw ParseError(line: lineNumber, message: "expected key = value, a [section], or a # comment")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespacesAndNewlines)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            guard !key.isEmpty else { throw ParseError(line: lineNumber, message: "a key is missing before '='") }
            guard !sections.isEmpty else {
                throw ParseError(line: lineNumber, message: "'\(key)' comes before any [section]")
            }
            sections[sections.count - 1].entries.append((key, value, lineNumber))
        }
        self.sections = sections
    }
}
