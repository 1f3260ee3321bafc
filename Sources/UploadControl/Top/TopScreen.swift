import CNcurses
import Glibc
import UploadWire

/// The terminal while `top` runs, through ncurses: full screen, keys one at a time, no echo, no
/// cursor. `end()` gives the terminal back as it was; every way out of `top` calls it.
final class TopScreen {
    private(set) var isOpen = false

    /// Starts ncurses. Keys are waited for at most `tick` milliseconds.
    func open(tick: Int32) {
        setlocale(LC_ALL, "")
        initscr()
        cbreak()
        noecho()
        nonl()
        keypad(CNcurses_screen(), true)
        curs_set(0)
        timeout(tick)
        isOpen = true
    }

    func end() {
        guard isOpen else { return }
        isOpen = false
        endwin()
    }

    var rows: Int { Int(CNcurses_lines()) }
    var columns: Int { Int(CNcurses_columns()) }

    /// The next key, or nil when none came within the tick. KEY_RESIZE comes after a SIGWINCH.
    func key() -> Int32? {
        let key = getch()
        return key == ERR ? nil : key
    }

    func clearAll() { erase() }

    /// `text` at `row`, cut to the screen's width (by display columns), the rest of the line blank.
    func put(_ text: String, row: Int, reverse: Bool = false, bold: Bool = false) {
        guard row >= 0, row < rows else { return }
        let shown = TerminalText.width(text) > columns ? TerminalText.middleTruncated(text, to: columns) : text
        if reverse { _ = CNcurses_reverse(1) }
        if bold { _ = CNcurses_bold(1) }
        move(Int32(row), 0)
        clrtoeol()
        addstr(shown)
        if reverse {
            // The selected row is highlighted across the whole width.
            let padding = columns - TerminalText.width(shown)
            if padding > 0 { addstr(String(repeating: " ", count: padding)) }
            _ = CNcurses_reverse(0)
        }
        if bold { _ = CNcurses_bold(0) }
    }

    func show() { refresh() }

    /// Asks a question on the last line and waits for y or n (anything else is no).
    func confirm(_ question: String) -> Bool {
        put("\(question) [y/N]", row: rows - 1, bold: true)
        show()
        timeout(-1)
        defer { timeout(100) }
        let answer = getch()
        return answer == Int32(UInt8(ascii: "y")) || answer == Int32(UInt8(ascii: "Y"))
    }

    /// Reads a line of text on the last row (the filter), Enter to accept, Escape to cancel.
    func readLine(prompt: String, initial: String) -> String? {
        var text = initial
        timeout(-1)
        defer { timeout(100) }
        while true {
            put("\(prompt)\(text)", row: rows - 1, bold: true)
            show()
            let key = getch()
            switch key {
            case 10, 13, KEY_ENTER: return text
            case 27: return nil
            case KEY_BACKSPACE, 127, 8: if !text.isEmpty { text.removeLast() }
            case 32...126: text.append(Character(Unicode.Scalar(UInt8(key))))
            default: break
            }
        }
    }
}
