import CShims

/// Text from the daemon, servers and file names made safe to show to people.
///
/// A name or a server's error can hold escape sequences that a terminal would obey (retitle the
/// window, clear the screen, fake a prompt) and line breaks that split a row. Control characters
/// (C0, DEL, C1) and the bidirectional overrides that reorder what is shown become visible escapes
/// such as `\n` and `\x1b`, in the manner of `ls` and `git`. `--json` output is not touched: JSON
/// escapes them itself and programs get the data as it is.
enum TerminalText {
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                let hex = String(scalar.value, radix: 16)
                result += scalar.value <= 0xFF ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{\(hex)}"
            }
        }
        return result
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00..<0x20, 0x7F..<0xA0: return true
        // Bidirectional embeddings, overrides and isolates (the "Trojan Source" characters).
        case 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}

extension TerminalText {
    /// Columns `text` takes on a terminal (a wide character takes two, a combining mark none).
    static func width(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + max(Int(CShims_display_width($1.value)), 0) }
    }

    /// `text` cut to `columns`, its middle replaced by `…`, so that both ends of a path show.
    static func middleTruncated(_ text: String, to columns: Int) -> String {
        guard width(text) > columns else { return text }
        guard columns > 1 else { return String(repeating: "…", count: max(columns, 0)) }
        let scalars = Array(text.unicodeScalars)
        let budget = columns - 1
        var head = "", tail = ""
        var headWidth = 0, tailWidth = 0
        var front = 0, back = scalars.count - 1
        while front <= back {
            let frontWidth = max(Int(CShims_display_width(scalars[front].value)), 0)
            if headWidth <= tailWidth {
                guard headWidth + tailWidth + frontWidth <= budget else { break }
                head.unicodeScalars.append(scalars[front])
                headWidth += frontWidth
                front += 1
            } else {
                let backWidth = max(Int(CShims_display_width(scalars[back].value)), 0)
                guard headWidth + tailWidth + backWidth <= budget else { break }
                tail.unicodeScalars.insert(scalars[back], at: tail.unicodeScalars.startIndex)
                tailWidth += backWidth
                back -= 1
            }
        }
        return head + "…" + tail
    }
}
