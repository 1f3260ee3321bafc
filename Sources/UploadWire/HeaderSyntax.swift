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
}

/// `name=value` form fields as users write them.
public enum FieldSyntax {
    public static func parse(_ text: String) -> KeyValue? {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else { return nil }
        return KeyValue(name: String(text[..<equals]), value: String(text[text.index(after: equals)...]))
    }
}
