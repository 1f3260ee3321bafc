import Foundation
import UploadWire

// libFuzzer entry point: the config, parsed as uploadd does it (INIDocument, then the daemon's
// DaemonConfig), must be refused with a message or loaded, never crash; what loads must hold the
// loader's promises; and a parsed INI document written out again must parse to an equal one.
// Built by contrib/scripts/fuzz over the UploadCore module (built for testing: INIDocument is
// internal to it) with the daemon's config loader (Sources/UploadDaemon/Config/DaemonConfig.swift,
// with the two UploadPlatform files it uses).
@testable import UploadCore

@_cdecl("LLVMFuzzerTestOneInput")
public func configFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let document = try? INIDocument(parsing: text) else {
        // What the INI parser refuses, the daemon's loader refuses too.
        precondition((try? DaemonConfig.parse(text)) == nil, "DaemonConfig loaded a document INIDocument refuses")
        return 0
    }
    let written = INIWriter.write(document)
    let again: INIDocument
    do {
        again = try INIDocument(parsing: written)
    } catch {
        preconditionFailure("a parsed document, written out, does not parse: \(error)\n\(written)")
    }
    precondition(again == document, "a parsed document, written out, parses to another one:\n\(written)")

    for section in document.sections {
        for entry in section.entries {
            if let header = HeaderSyntax.parse(entry.value) {
                // Nothing that could split or end a header line gets through, and the header reads back as written.
                precondition(
                    !header.name.isEmpty && header.name.allSatisfy { $0.isASCII && !$0.isWhitespace && $0 != ":" })
                precondition(
                    !"\(header.name)\(header.value)".unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" })
                precondition(
                    HeaderSyntax.parse("\(header.name): \(header.value)") == header, "header does not read back")
            }
            if let field = FieldSyntax.parse(entry.value) {
                precondition(!field.name.isEmpty && FieldSyntax.parse("\(field.name)=\(field.value)") == field)
            }
            if let bytes = try? ByteSize.parse(entry.value) { precondition(bytes >= 0, "negative size \(bytes)") }
        }
    }

    // The daemon's loader: limits hold, every remote has a name and a URL, headers are well formed.
    guard let config = try? DaemonConfig.parse(text) else { return 0 }
    precondition((1...64).contains(config.maxTransfers), "transfers \(config.maxTransfers)")
    precondition(config.stallTimeout >= 1 && config.connectTimeout >= 1 && config.responseTimeout >= 1)
    precondition(config.rateLimit.map { $0 > 0 } ?? true, "rate limit \(String(describing: config.rateLimit))")
    for (name, remote) in config.remotes {
        precondition(!name.isEmpty && name == remote.name && !remote.url.isEmpty, "remote \(name): \(remote)")
        for header in remote.headers {
            precondition(HeaderSyntax.parse("\(header.name): \(header.value)") == header, "remote \(name): \(header)")
        }
        if let chunkSize = remote.chunkSize {
            precondition(ChunkSize.isValid(chunkSize), "remote \(name): chunk size \(chunkSize)")
        }
    }
    let remoteSections = Set(document.sections.filter { $0.kind == "remote" }.compactMap(\.name))
    precondition(
        Set(config.remotes.keys) == remoteSections, "remotes \(config.remotes.keys) from sections \(remoteSections)")
    return 0
}

/// Writes an INIDocument back as text that parses to an equal document: every section and entry on
/// the line it came from (blank lines in between), a value or a section name in quotes only where
/// the parser would otherwise change it (surrounding spaces, or quotes of its own).
enum INIWriter {
    static func write(_ document: INIDocument) -> String {
        var lines: [String] = []
        func put(_ text: String, at line: Int) {
            while lines.count < line - 1 { lines.append("") }
            lines.append(text)
        }
        for section in document.sections {
            // "[ " and " ]": the brackets stay characters of their own whatever the kind starts or ends with.
            put("[ " + section.kind + (section.name.map { " " + quotedIfNeeded($0) } ?? "") + " ]", at: section.line)
            for entry in section.entries {
                put(
                    entry.value.isEmpty ? "\(entry.key) =" : "\(entry.key) = \(quotedIfNeeded(entry.value))",
                    at: entry.line)
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The parser trims values and takes one pair of surrounding quotes off: quote what it would
    /// change, and an empty name (`[remote ""]`), which would otherwise be no name at all.
    private static func quotedIfNeeded(_ value: String) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        let wrapped = value.count >= 2 && value.hasPrefix("\"") && value.hasSuffix("\"")
        return value.isEmpty || trimmed != value || wrapped ? "\"" + value + "\"" : value
    }
}
