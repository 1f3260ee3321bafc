import Glibc
import UploadWire

/// A secret given as an option's value, and what `ps` shows instead once it is read.
///
/// Every user on the machine can read a process's arguments (`ps`, /proc/PID/cmdline), and an
/// `add --wait` runs for as long as its uploads do. uploadctl cannot keep the secret from being
/// there when it starts, but it writes over it as soon as it has parsed it, and says how to keep
/// it off the command line altogether.
struct CommandLineSecret: Sendable, Equatable {
    /// The option, as in `--user=VALUE`.
    var option: String
    /// The value as typed.
    var value: String
    /// What is written over it: never longer, as the arguments' bytes cannot grow.
    var shown: String
    /// Whether it is a credential that has a better way in (a prompt, a file, a remote), and so
    /// warrants the warning; a presigned URL has none.
    var warns: Bool

    /// What `argument` (one word of the command line) becomes, or nil when it is not this secret.
    func replacement(for argument: String) -> String? {
        if argument == value { return shown }
        if argument == "\(option)=\(value)" { return "\(option)=\(shown)" }
        return nil
    }

    /// Said once on stderr when a secret was on the command line.
    static let warning =
        "warning: a password or token on the command line is seen by other users' ps and kept in your shell's history; use --user NAME alone (asked without echo), --password-file FILE, --header-file FILE, or a remote in uploadd.conf"

    /// `--user NAME:PASSWORD`: the name stays, the password goes.
    static func user(_ value: String) -> CommandLineSecret? {
        guard let colon = value.firstIndex(of: ":"), value.index(after: colon) < value.endIndex else { return nil }
        return CommandLineSecret(option: "--user", value: value, shown: value[...colon] + "*", warns: true)
    }

    /// `--header 'Name: value'`: the name stays, the value goes. Any header may carry a
    /// credential (`X-Upload-Key`, `Private-Token`, every service its own), so every value is
    /// hidden; the warning is for the names that plainly do, which a harmless header would not earn.
    static func header(_ value: String) -> CommandLineSecret? {
        guard let header = HeaderSyntax.parse(value), !header.value.isEmpty, let colon = value.firstIndex(of: ":"),
            let valueStart = value[value.index(after: colon)...].firstIndex(where: { $0 != " " && $0 != "\t" })
        else { return nil }
        let name = header.name.lowercased()
        let warns = credentialWords.contains { name.contains($0) }
        return CommandLineSecret(option: "--header", value: value, shown: value[..<valueStart] + "*", warns: warns)
    }

    /// Words in the names of headers that carry credentials: `Authorization`, `Cookie`,
    /// `X-Api-Key`, `X-Auth-Token`, `Private-Token`, `X-Amz-Security-Token`...
    private static let credentialWords = [
        "auth", "cookie", "key", "token", "secret", "session", "password", "signature",
    ]

    /// `--to URL`: a password (`https://user:pw@host/`) or query values (a presigned URL's
    /// signature) go, as `list` and `show` redact them; only a password warrants the warning.
    static func destination(_ value: String) -> CommandLineSecret? {
        let shown = Redaction.redactURL(value, placeholder: "*")
        guard shown != value else { return nil }
        return CommandLineSecret(option: "--to", value: value, shown: shown, warns: hasPassword(value))
    }

    /// Whether `url`'s authority holds `user:password@`.
    private static func hasPassword(_ url: String) -> Bool {
        guard let scheme = url.range(of: "://") else { return false }
        let rest = url[scheme.upperBound...]
        let authority = rest[..<(rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex)]
        guard let at = authority.lastIndex(of: "@") else { return false }
        return authority[..<at].contains(":")
    }
}

/// The process's own arguments, as `ps` and /proc/PID/cmdline show them.
enum ProcessArguments {
    /// Writes each secret's `shown` over the arguments that hold it, in place: the bytes the
    /// kernel shows are the strings `CommandLine.unsafeArgv` points at. The rest of each is
    /// filled with NULs (`ps` shows them as spaces); its end stays where it was.
    static func hide(_ secrets: [CommandLineSecret]) {
        let argv = CommandLine.unsafeArgv
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = argv[index] else { continue }
            let length = strlen(argument)
            let text = String(cString: argument)
            guard let shown = secrets.lazy.compactMap({ $0.replacement(for: text) }).first else { continue }
            let bytes = Array(shown.utf8.prefix(length))
            argument.withMemoryRebound(to: UInt8.self, capacity: length) { memory in
                for offset in 0..<length { memory[offset] = offset < bytes.count ? bytes[offset] : 0 }
            }
        }
    }
}
