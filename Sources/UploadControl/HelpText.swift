import UploadWire

/// Help texts fitted to 80 columns (or a narrower terminal): `add --help` had 37 lines over 80
/// characters, its usage line 170. Each long line wraps at spaces, and its continuation lines
/// start where its text does: under an option's description, under the usage's arguments, or,
/// for an example's command line, after a ` \` so that it still pastes as one command, and for an
/// example's `#` comment, as a comment.
enum HelpText {
    static let width = 80

    /// The texts are written in lines of up to 100 columns. A line too long for `width` carries
    /// what does not fit into the next line when that one goes on with it (the rest of a
    /// paragraph, of the usage, of an option's description), so that the text reads as one:
    /// `limit --help` ended lines with "and" and "the" alone. Lines that fit stay as written.
    static func wrapped(_ text: String, width: Int = width) -> String {
        var lines: [String] = []
        var carried: (indent: Int, text: String)?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            var line = line
            var indent = continuationIndent(line)
            if let tail = carried {
                carried = nil
                if goesOn(line, indent: tail.indent) {
                    line = String(repeating: " ", count: tail.indent) + tail.text + " " + line.drop { $0 == " " }
                    indent = tail.indent
                } else {
                    lines += wrap(String(repeating: " ", count: tail.indent) + tail.text, width: width)
                }
            }
            let pieces = wrap(line, width: width)
            if pieces.count > 1, let indent {
                lines.append(pieces[0])
                carried = (indent, pieces.dropFirst().map { $0.drop { $0 == " " } }.joined(separator: " "))
            } else {
                lines += pieces
            }
        }
        if let carried { lines += wrap(String(repeating: " ", count: carried.indent) + carried.text, width: width) }
        return lines.joined(separator: "\n")
    }

    /// Where a line's wrapped words go on, when the next line may take them: a paragraph's (0),
    /// the usage's, an option's description. Nil for examples, comments and list items, which
    /// wrap by themselves.
    private static func continuationIndent(_ line: String) -> Int? {
        let leading = line.prefix { $0 == " " }.count
        let text = line.dropFirst(leading)
        let special = ["- ", "# ", "uploadctl ", "find ", "$ "]
        guard !text.isEmpty, !special.contains(where: { text.hasPrefix($0) }) else { return nil }
        let indent = hangingIndent(line, leading: leading)
        return indent > leading || (leading == 0 && indent == 0) ? indent : nil
    }

    /// Whether `line` goes on with the line before, whose words continue at `indent`: a plain
    /// line of a paragraph after a paragraph, an indented line that is no row or item of its own
    /// after a usage or an option. A heading ("Examples:") never does.
    private static func goesOn(_ line: String, indent: Int) -> Bool {
        let leading = line.prefix { $0 == " " }.count
        let text = line.dropFirst(leading)
        // An option's row begins with "-"; in a paragraph only a list item does ("--batch N" goes on).
        let special = [indent == 0 ? "- " : "-", "#", "uploadctl ", "find ", "$ ", "Usage: "]
        guard !text.isEmpty, !text.hasSuffix(":"), !special.contains(where: { text.hasPrefix($0) }) else {
            return false
        }
        guard hangingIndent(line, leading: leading) == leading else { return false }  // a row of a table
        return indent == 0 ? leading == 0 : leading > 0
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
