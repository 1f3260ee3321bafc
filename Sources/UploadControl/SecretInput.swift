import Foundation
import Glibc
import UploadWire

/// Secrets that should not be on the command line, where `ps` and the shell's history show them:
/// passwords from a file or a no-echo prompt, headers from a file.
enum SecretInput {
    /// The first line of `path`, for `--password-file`; warns as ssh does when others can read it.
    static func password(fromFile path: String, context: CommandContext) throws(UsageError) -> String {
        let text = try read(path, option: "--password-file", context: context)
        return lines(text).first ?? ""
    }

    /// `K: V` lines of `path`, for `--header-file`; blank lines and `#` comments are skipped.
    static func headers(fromFile path: String, context: CommandContext) throws(UsageError) -> [String] {
        let text = try read(path, option: "--header-file", context: context)
        var headers: [String] = []
        for (number, line) in lines(text).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let header = HeaderSyntax.parse(line) else {
                throw UsageError("\(path), line \(number + 1): a header must look like 'Name: value'")
            }
            if let refusal = HeaderSyntax.refusal(ofName: header.name) {
                throw UsageError("\(path), line \(number + 1): \(refusal)")
            }
            headers.append(line)
        }
        return headers
    }

    /// Asks for `user`'s password on the terminal, without echo. Ctrl-C gives up.
    static func promptPassword(for user: String) throws(UsageError) -> String {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else {
            throw UsageError(
                "--user \(user) has no password and there is no terminal to ask on; use --password-file FILE, or --user \(user):PASSWORD"
            )
        }
        defer { close(tty) }
        var saved = termios()
        guard tcgetattr(tty, &saved) == 0 else {
            throw UsageError("--user \(user) has no password and /dev/tty is not a terminal; use --password-file FILE")
        }
        var quiet = saved
        // No echo; no signals either, so that Ctrl-C arrives as a byte and the echo is always restored.
        quiet.c_lflag &= ~tcflag_t(ECHO | ISIG)
        quiet.c_lflag |= tcflag_t(ECHONL)
        write(tty, "Password for \(user): ")
        tcsetattr(tty, TCSAFLUSH, &quiet)
        defer { tcsetattr(tty, TCSAFLUSH, &saved) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = Glibc.read(tty, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") { break }
            if byte == 3 {  // Ctrl-C
                write(tty, "\n")
                throw UsageError("no password given")
            }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// Lines ended by LF or CRLF (a String's "\r\n" is one Character).
    private static func lines(_ text: String) -> [String] {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init)
    }

    private static func write(_ tty: Int32, _ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(tty, $0.baseAddress, $0.count - 1) }
    }

    private static func read(_ path: String, option: String, context: CommandContext) throws(UsageError) -> String {
        let absolute = path.hasPrefix("/") ? path : context.workingDirectory + "/" + path
        guard let data = FileManager.default.contents(atPath: absolute) else {
            throw UsageError("\(option): cannot read \(path)")
        }
        var info = stat()
        if stat(absolute, &info) == 0, info.st_mode & 0o044 != 0 {
            context.printError(
                "warning: \(path) is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); keep secrets private with: chmod 600 \(path)"
            )
        }
        return String(decoding: data, as: UTF8.self)
    }
}
