import Foundation

/// `Name: value` headers as users write them.
public enum HeaderSyntax {
    public static func parse(_ text: String) -> KeyValue? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let name = text[..<colon].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != ":" }),
            !text.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" })
        else { return nil }
        return KeyValue(name: name, value: value)
    }

    /// Why a header of this name cannot be given (the `--header`, `header =` and `job.add` checks),
    /// or nil when it can. These frame the request or manage the connection, which uploadd and
    /// libcurl do themselves: a `Content-Length: 0` of the user's sends a body the server does not
    /// read, a `Host` of theirs sends the credentials to another virtual host.
    public static func refusal(ofName name: String) -> String? {
        guard let reason = managedHeaders[name.lowercased()] else { return nil }
        return "\(name) cannot be set: uploadd \(reason); leave it out"
    }

    private static let managedHeaders: [String: String] = {
        let framing = "sets it, as it frames the request's body"
        let connection = "manages the connection itself"
        return [
            "content-length": framing, "transfer-encoding": framing, "te": framing, "trailer": framing,
            "host": "takes it from the destination URL", "connection": connection, "keep-alive": connection,
            "proxy-connection": connection, "upgrade": connection,
            "expect": "decides itself whether to wait for 100 Continue",
        ]
    }()
}

/// `name=value` form fields as users write them.
public enum FieldSyntax {
    public static func parse(_ text: String) -> KeyValue? {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else { return nil }
        return KeyValue(name: String(text[..<equals]), value: String(text[text.index(after: equals)...]))
    }

    /// Whether `name` can name a multipart part (`--file-field`): 1 to 256 bytes, no control
    /// characters, no double quote (it goes between quotes in Content-Disposition).
    public static func isPartName(_ name: String) -> Bool {
        (1...256).contains(name.utf8.count)
            && !name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0 == "\"" }
    }
}
