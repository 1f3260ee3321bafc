import UploadWire

/// Help texts fitted to 80 columns (or a narrower terminal): `add --help` had 37 lines over 80
/// characters, its usage line 170. Each long line wraps at spaces, and its continuation lines
/// start where its text does: under an option's description, under the usage's arguments, or,
/// for an example's command line, after a ` \` so that it still pastes as one command, and for an
/// example's `#` comment, as a comment.
enum HelpText {
    static let width = 80

    static func wrapped(_ text: String, width: Int = width) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).flatMap { line in
            wrap(String(line), width: width)
        }.joined(separator: "\n")
    }

    static func wrap(_ line: String, width: Int) -> [String] {
        guard TerminalText.width(line) > width else { return [line] }
        let leading = line.prefix { $0 == " " }.count
        let text = line.dropFirst(leading)
        let isCommandLine = text.hasPrefix("uploadctl ") || text.hasPrefix("find ") || text.hasPrefix("$ ")
        let indent = isCommandLine ? leading + 4 : hangingIndent(line, leading: leading)
        // An example's comment goes on as a comment.
        let continuation =
            String(repeating: " ", count: text.hasPrefix("# ") ? leading : indent) + (text.hasPrefix("# ") ? "# " : "")
        let marker = isCommandLine ? " \\" : ""
        var lines: [String] = []
        var current = String(line.prefix(leading))
        var currentHasWord = false
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let candidate = current + (currentHasWord ? " " : "") + word
            if currentHasWord && TerminalText.width(candidate) + marker.count > width && !word.isEmpty {
                lines.append(String(current.reversed().drop { $0 == " " }.reversed()) + marker)
                current = continuation + word
            } else {
                current = candidate
            }
            currentHasWord = true
        }
        lines.append(current)
        return lines
    }

    /// Where a line's text continues: after `Usage: `, after an option's name and the gap of two
    /// or more spaces before its description, or under the line's first word.
    private static func hangingIndent(_ line: String, leading: Int) -> Int {
        if line.hasPrefix("Usage: ") { return "Usage: ".count }
        let characters = Array(line)
        var index = leading
        while index + 1 < characters.count {
            if characters[index] == " " && characters[index + 1] == " " {
                var end = index
                while end < characters.count && characters[end] == " " { end += 1 }
                // A gap well inside the line: the description column of an option table.
                if end < characters.count && end <= 40 { return end }
                break
            }
            index += 1
        }
        return leading + (line.dropFirst(leading).hasPrefix("- ") ? 2 : 0)
    }
}
