import Foundation

/// The repository's root, found from this file's place (Tests/TestSupport/).
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A man page of contrib/man, read the way its comments describe, for the tests that keep the
/// pages and the code in step: `.SH` sections, `.SS` subsections, and items whose tag line (after
/// `.TP`) names what they document in bold.
public struct ManPageSource {
    public var lines: [String]

    /// Reads `relativePath`, relative to the repository's root.
    public init(_ relativePath: String) throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(relativePath), encoding: .utf8)
        lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// The lines of `.SH NAME`, up to the next `.SH` (its `.SS` subsections included).
    public func section(_ name: String) -> [String] {
        var inside = false
        var result: [String] = []
        for line in lines {
            if line.hasPrefix(".SH ") {
                inside = Self.heading(line) == name
            } else if inside {
                result.append(line)
            }
        }
        return result
    }

    /// The `.SS` subsections among `lines`, in order, each with its lines up to the next one.
    public static func subsections(_ lines: [String]) -> [(name: String, lines: [String])] {
        var result: [(name: String, lines: [String])] = []
        for line in lines {
            if line.hasPrefix(".SS ") {
                result.append((heading(line), []))
            } else if !result.isEmpty {
                result[result.count - 1].lines.append(line)
            }
        }
        return result
    }

    /// The tag line of every item among `lines`: the line after each `.TP`.
    public static func itemTags(_ lines: [String]) -> [String] {
        zip(lines, lines.dropFirst()).filter { $0.0 == ".TP" }.map { $0.1 }
    }

    /// The bold words of every item's tag line among `lines`: the options an item documents.
    public static func itemNames(_ lines: [String]) -> [String] {
        itemTags(lines).flatMap { boldWords($0) }
    }

    /// The tag line of each item in `lines`, with the text that follows it up to the next item.
    public static func items(_ lines: [String]) -> [(tag: String, body: String)] {
        var items: [(tag: String, body: String)] = []
        var index = lines.startIndex
        while index < lines.endIndex {
            if lines[index] == ".TP", index + 1 < lines.endIndex {
                items.append((lines[index + 1], ""))
                index += 2
                continue
            }
            if lines[index].hasPrefix(".SS") || lines[index] == ".PP" {
                // A subsection or paragraph ends the item list's last body.
                items.append(("", ""))
            } else if !items.isEmpty {
                items[items.count - 1].body += plain(lines[index]) + " "
            }
            index += 1
        }
        return items.filter { !$0.tag.isEmpty }
    }

    /// `\fBword\fR` in a line, unescaped; with `beforeEquals`, only the words left of ` = `.
    public static func boldWords(_ line: String, beforeEquals: Bool = false) -> [String] {
        let part = beforeEquals ? (line.components(separatedBy: " = ").first ?? line) : line
        return part.components(separatedBy: "\\fB").dropFirst().map { plain($0.components(separatedBy: "\\f")[0]) }
    }

    /// Text without roff's escapes for dashes, zero-width breaks, backslashes, quotes and fonts.
    public static func plain(_ text: String) -> String {
        var text = text.replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\&", with: "")
            .replacingOccurrences(of: "\\(aq", with: "'").replacingOccurrences(of: "\\e", with: "\\")
        for font in ["\\fB", "\\fI", "\\fR", "\\fP"] { text = text.replacingOccurrences(of: font, with: "") }
        return text
    }

    /// The text between `.EX` and `.EE` in `lines`, unescaped.
    public static func example(_ lines: [String]) -> String {
        guard let start = lines.firstIndex(of: ".EX"), let end = lines[start...].firstIndex(of: ".EE") else {
            return ""
        }
        return lines[(start + 1)..<end].map(plain).joined(separator: "\n")
    }

    /// `.SH "EXIT STATUS"` and `.SH EXIT STATUS` both name `EXIT STATUS`.
    private static func heading(_ line: String) -> String {
        line.dropFirst(4).trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
}
