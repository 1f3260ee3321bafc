import Foundation
import Glibc

/// A hook's command line: a program and its arguments, run without a shell.
///
/// Written as a shell would split it (`notify-send 'Upload done'`), but nothing is expanded:
/// no variables, globs or pipes. A user who wants a shell asks for one: `sh -c '...'`.
struct HookCommand: Sendable, Equatable, CustomStringConvertible {
    var arguments: [String]

    /// Splits `text` into words: blanks separate them, single quotes keep everything literal,
    /// double quotes keep all but `\"` and `\\`, and a backslash outside quotes escapes the next
    /// character. Nil for an empty command or an unclosed quote. Hand-written: glibc's wordexp
    /// would also expand variables and globs, which a hook must not.
    init?(parsing text: String) {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in text {
            if escaped {
                word.append(character)
                escaped = false
                continue
            }
            switch (quote, character) {
            case (nil, "\\"), ("\"", "\\"):
                escaped = true
                inWord = true
            case (nil, "'"), (nil, "\""):
                quote = character
                inWord = true
            case ("'", "'"), ("\"", "\""):
                quote = nil
            case (nil, " "), (nil, "\t"):
                if inWord { words.append(word) }
                word = ""
                inWord = false
            default:
                word.append(character)
                inWord = true
            }
        }
        guard quote == nil, !escaped else { return nil }
        if inWord { words.append(word) }
        guard let program = words.first, !program.isEmpty else { return nil }
        arguments = words
    }

    var description: String { arguments.joined(separator: " ") }

    /// The program as execve needs it: a path as given, else the first executable of that name on
    /// `searchPath` (PATH). One resolution for the check at load and the run, so that the file
    /// checked is the file run.
    func executable(searchPath: String?) -> String {
        let name = arguments[0]
        guard !name.contains("/") else { return name }
        for folder in (searchPath ?? Self.defaultSearchPath).split(separator: ":") where !folder.isEmpty {
            let candidate = "\(folder)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return name  // execve fails, and the error names it
    }

    /// The PATH hooks get when the daemon has none.
    static let defaultSearchPath = "/usr/local/bin:/usr/bin:/bin"
}

/// `on_complete`, `on_failure` and `hook_timeout` of `[daemon]`.
struct HookSettings: Sendable, Equatable {
    var onComplete: HookCommand?
    var onFailure: HookCommand?
    /// A hook still running after this long is killed (its process group, SIGTERM then SIGKILL).
    var timeout: Duration = .seconds(30)
}

/// `notify =`: which job endings show a desktop notification.
enum NotifyPolicy: String, Sendable, Equatable {
    case failures, all, none
}

/// `UPLOAD_URL`: the URL the server named for the uploaded file, which is the server's text. A
/// hook may paste it into a shell command, a chat message or a log line, so it gets only a
/// well-formed http(s) URL: no line breaks or escape sequences, nothing a URL cannot hold.
enum HookURL {
    /// Why `url` is not given to a hook, or nil when it is.
    static func refusal(of url: String) -> String? {
        let lowercased = url.lowercased()
        guard lowercased.hasPrefix("http://") || lowercased.hasPrefix("https://") else {
            return "it is not an http or https URL"
        }
        if url.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }) {
            return "it holds control characters"
        }
        if let bad = url.unicodeScalars.first(where: { !isURLCharacter($0) }) {
            return
                "it holds \(bad.value == 0x20 ? "a space" : "U+\(String(bad.value, radix: 16, uppercase: true))"), which a URL cannot"
        }
        guard let host = URLComponents(string: url)?.host, !host.isEmpty else { return "it names no host" }
        return nil
    }

    /// What RFC 3986 allows in a URL: printable ASCII but for space and `"<>\^`{|}`.
    private static func isURLCharacter(_ scalar: Unicode.Scalar) -> Bool {
        (0x21...0x7E).contains(scalar.value) && !"\"<>\\^`{|}".unicodeScalars.contains(scalar)
    }
}
