import Foundation

/// Just enough XML for S3's answers: the text of a few known elements.
///
/// Why not FoundationXML's XMLParser: on Linux it links libxml2 into the daemon, a whole XML stack
/// for reading UploadId, the parts of ListParts, IsTruncated, NextPartNumberMarker and an error's
/// Code and Message. S3's answers are flat, machine-written documents; this finds `<Name>` or
/// `<Name attr="…">` and the text up to `</Name>`, skipping CDATA and comments not at all (S3 sends
/// neither), and decodes the five predefined entities and numeric character references.
enum S3XML {
    /// The decoded text of every `<name>…</name>` in `text`, in order. `<name/>` gives "".
    static func values(_ name: String, in text: String) -> [String] {
        elements(name, in: text).map(unescape)
    }

    /// The decoded text of the first `<name>…</name>`, or nil.
    static func value(_ name: String, in text: String) -> String? {
        values(name, in: text).first
    }

    /// The raw inner text of every `<name>…</name>` (markup kept), for nested elements such as `Part`.
    static func elements(_ name: String, in text: String) -> [String] {
        var results: [String] = []
        var searchStart = text.startIndex
        let open = "<" + name
        let close = "</" + name + ">"
        while let start = text.range(of: open, range: searchStart..<text.endIndex) {
            // The tag name must end here: `<Part>` must not match `<PartNumber>`.
            guard let after = text[start.upperBound...].first, after == ">" || after == "/" || after.isWhitespace
            else {
                searchStart = start.upperBound
                continue
            }
            guard let tagEnd = text.range(of: ">", range: start.upperBound..<text.endIndex) else { break }
            if text[text.index(before: tagEnd.lowerBound)] == "/" {
                results.append("")
                searchStart = tagEnd.upperBound
                continue
            }
            guard let end = text.range(of: close, range: tagEnd.upperBound..<text.endIndex) else { break }
            results.append(String(text[tagEnd.upperBound..<end.lowerBound]))
            searchStart = end.upperBound
        }
        return results
    }

    /// `&amp; &lt; &gt; &quot; &apos;` and `&#N;` / `&#xN;` to characters; anything else unchanged.
    static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var output = ""
        var rest = Substring(text)
        while let ampersand = rest.firstIndex(of: "&") {
            output += rest[..<ampersand]
            let entityStart = rest.index(after: ampersand)
            guard let semicolon = rest[entityStart...].prefix(10).firstIndex(of: ";") else {
                output.append("&")
                rest = rest[entityStart...]
                continue
            }
            let entity = rest[entityStart..<semicolon]
            var replacement: String?
            switch entity {
            case "amp": replacement = "&"
            case "lt": replacement = "<"
            case "gt": replacement = ">"
            case "quot": replacement = "\""
            case "apos": replacement = "'"
            default:
                if entity.hasPrefix("#x") || entity.hasPrefix("#X"), let code = UInt32(entity.dropFirst(2), radix: 16),
                    let scalar = Unicode.Scalar(code)
                {
                    replacement = String(Character(scalar))
                } else if entity.hasPrefix("#"), let code = UInt32(entity.dropFirst()),
                    let scalar = Unicode.Scalar(code)
                {
                    replacement = String(Character(scalar))
                }
            }
            if let replacement {
                output += replacement
                rest = rest[rest.index(after: semicolon)...]
            } else {
                output.append("&")
                rest = rest[entityStart...]
            }
        }
        output += rest
        return output
    }

    /// Text made safe inside an element: `& < > " '` as entities.
    static func escape(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&apos;"
            default: output.append(character)
            }
        }
        return output
    }
}

/// What S3 says in its answers, read with `S3XML`.
enum S3Answer {
    /// `<Error><Code>…</Code><Message>…</Message></Error>`.
    struct ErrorDocument: Equatable {
        var code: String
        var message: String
    }

    /// The start of an answer that is not an S3 error document, on one line, for a message.
    static func summary(_ body: String) -> String {
        let oneLine = body.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
        return oneLine.count > 200 ? String(oneLine.prefix(200)) + "…" : oneLine
    }

    static func error(in body: String) -> ErrorDocument? {
        guard let error = S3XML.elements("Error", in: body).first else { return nil }
        let code = S3XML.value("Code", in: error) ?? ""
        let message = S3XML.value("Message", in: error) ?? ""
        guard !code.isEmpty || !message.isEmpty else { return nil }
        return ErrorDocument(code: code, message: message)
    }

    /// One part as ListParts lists it.
    struct ListedPart: Equatable {
        var number: Int
        var etag: String
        var size: Int64
        /// Base64 of the part's CRC32C, when the upload declared that checksum.
        var checksumCRC32C: String?
    }

    /// A page of ListParts.
    struct PartsPage: Equatable {
        var parts: [ListedPart]
        var isTruncated: Bool
        var nextPartNumberMarker: Int?
    }

    static func partsPage(in body: String) -> PartsPage {
        let parts = S3XML.elements("Part", in: body).compactMap { part -> ListedPart? in
            guard
                let number = S3XML.value("PartNumber", in: part).flatMap({
                    Int($0.trimmingCharacters(in: .whitespaces))
                }), (1...Int(S3PartSizing.maximumParts)).contains(number)
            else { return nil }
            let size = S3XML.value("Size", in: part).flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? -1
            let checksum = S3XML.value("ChecksumCRC32C", in: part).flatMap { $0.isEmpty ? nil : $0 }
            return ListedPart(
                number: number, etag: S3XML.value("ETag", in: part) ?? "", size: size, checksumCRC32C: checksum)
        }
        let truncated = S3XML.value("IsTruncated", in: body)?.lowercased() == "true"
        let marker = S3XML.value("NextPartNumberMarker", in: body).flatMap {
            Int($0.trimmingCharacters(in: .whitespaces))
        }
        return PartsPage(parts: parts, isTruncated: truncated, nextPartNumberMarker: marker)
    }

    /// The body of CompleteMultipartUpload.
    static func completeBody(_ parts: [(number: Int, etag: String, checksumCRC32C: String?)]) -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(S3XML.escape(part.etag))</ETag>"
            if let checksum = part.checksumCRC32C {
                xml += "<ChecksumCRC32C>\(S3XML.escape(checksum))</ChecksumCRC32C>"
            }
            xml += "</Part>"
        }
        xml += "</CompleteMultipartUpload>"
        return xml
    }
}
