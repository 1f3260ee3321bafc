import CShims
import UploadWire

/// uploadctl's part of `TerminalText` (the escaping is in UploadWire, shared with the daemon's log).
extension TerminalText {
    /// Columns `text` takes on a terminal (a wide character takes two, a combining mark none).
    static func width(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + max(Int(CShims_display_width($1.value)), 0) }
    }

    /// `text` cut to `columns`, its end replaced by `…`: for a message whose start says the most.
    static func endTruncated(_ text: String, to columns: Int) -> String {
        guard width(text) > columns else { return text }
        guard columns > 1 else { return String(repeating: "…", count: max(columns, 0)) }
        var kept = ""
        var keptWidth = 0
        for scalar in text.unicodeScalars {
            let scalarWidth = max(Int(CShims_display_width(scalar.value)), 0)
            guard keptWidth + scalarWidth <= columns - 1 else { break }
            kept.unicodeScalars.append(scalar)
            keptWidth += scalarWidth
        }
        return kept + "…"
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
