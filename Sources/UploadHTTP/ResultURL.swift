import Foundation

/// Finds the uploaded file's URL in a server's answer.
package enum ResultURL {
    /// Looks at `pointer` (a JSON pointer such as `/data/url`) when given, else at `url`, `fileUrl`
    /// and `location`, at the top level or under `data`; else at the Location header.
    package static func find(body: [UInt8], location: String?, pointer: String?) -> String? {
        if let json = try? JSONSerialization.jsonObject(with: Data(body)) {
            if let pointer {
                if let url = resolve(pointer, in: json) as? String { return url }
                return location
            }
            let keys = ["url", "fileUrl", "location", "Location", "file_url"]
            for container in [json, (json as? [String: Any])?["data"] as Any] {
                guard let object = container as? [String: Any] else { continue }
                for key in keys { if let value = object[key] as? String { return value } }
            }
        }
        return location
    }

    package static func resolve(_ pointer: String, in json: Any) -> Any? {
        var current: Any? = json
        for token in pointer.split(separator: "/", omittingEmptySubsequences: true) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if let object = current as? [String: Any] {
                current = object[key]
            } else if let array = current as? [Any], let index = Int(key), array.indices.contains(index) {
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }
}
