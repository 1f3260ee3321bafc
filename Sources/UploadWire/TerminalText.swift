/// Text from servers and file names made safe to show to people, on a terminal or in a log.
///
/// A name or a server's error can hold escape sequences that a terminal would obey (retitle the
/// window, clear the screen, fake a prompt) and line breaks that split a row. Control characters
/// (C0, DEL, C1) and the bidirectional overrides that reorder what is shown become visible escapes
/// such as `\n` and `\x1b`, in the manner of `ls` and `git`. uploadctl shows its output this way,
/// uploadd writes its log lines this way (`journalctl` and `tail -f` print them raw). JSON is not
/// touched: it escapes them itself and programs get the data as it is.
public enum TerminalText {
    /// `text` with its control characters escaped; with `lineBreak`, each `\n` becomes that
    /// instead (a log line keeps a multi-line message on one line as words).
    public static func escaped(_ text: String, lineBreak: String? = nil) -> String {
        guard mayNeedEscape(text) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += lineBreak ?? "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                let hex = String(scalar.value, radix: 16)
                result += scalar.value <= 0xFF ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{\(hex)}"
            }
        }
        return result
    }

    /// Whether `text` has a byte that starts a character to escape: a C0 control or DEL, 0xC2
    /// (which starts every C1 control) or 0xE2 (which starts the bidi controls). One pass over
    /// the bytes: the daemon's log asks this of every line, and nearly all need nothing.
    private static func mayNeedEscape(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in bytes.contains { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 } }
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
