import Foundation
import Testing

/// A real terminal for terminal programs: a private tmux server (its own socket) with one pane
/// running a plain bash, driven with send-keys and read with capture-pane.
final class TmuxPane {
    let socket: String
    static let prompt = "uploadd-test$ "

    init(width: Int, height: Int) throws {
        socket = try TestPaths.scratch("tmux").appendingPathComponent("tmux.sock").path
        try tmux([
            "new-session", "-d", "-s", "main", "-x", "\(width)", "-y", "\(height)",
            "env -i PS1='\(Self.prompt)' TERM=screen LANG=C.UTF-8 HOME=/tmp PATH=/usr/bin:/bin bash --norc --noprofile",
        ])
        _ = eventually(timeout: 10) { (try? self.capture())?.contains(Self.prompt) ?? false }
    }

    deinit { _ = try? Command.run("/usr/bin/tmux", ["-S", socket, "kill-server"]) }

    @discardableResult
    func tmux(_ arguments: [String]) throws -> CommandResult {
        let result = try Command.run("/usr/bin/tmux", ["-S", socket] + arguments, timeout: 30)
        guard result.status == 0 else { throw TestFailure("tmux \(arguments.joined(separator: " ")): \(result)") }
        return result
    }

    /// Types `line` and Enter.
    func run(_ line: String) throws { try tmux(["send-keys", "-t", "main", "-l", line]); try keys("Enter") }

    /// tmux key names: "q", "Up", "Enter", "C-c".
    func keys(_ names: String...) throws { try tmux(["send-keys", "-t", "main"] + names) }

    /// The pane's text now.
    /// The pane's text now, wrapped lines joined.
    func capture() throws -> String { try tmux(["capture-pane", "-p", "-J", "-t", "main"]).stdout }

    func resize(width: Int, height: Int) throws {
        try tmux(["resize-window", "-t", "main", "-x", "\(width)", "-y", "\(height)"])
    }

    /// Waits (up to `timeout` s) until the pane shows what `condition` wants; the last capture.
    @discardableResult
    func waitFor(timeout: Double = 15, _ condition: (String) -> Bool) -> (met: Bool, screen: String) {
        var screen = ""
        let met = eventually(timeout: timeout) {
            screen = (try? capture()) ?? ""
            return condition(screen)
        }
        return (met, screen)
    }
}
