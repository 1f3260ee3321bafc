import Foundation
import UploadWire

/// The daemon's answer to one request.
public struct RPCReply: Equatable, Sendable {
    /// The request's id, or nil when the daemon could not tell which request it answers (a parse error).
    public var id: Int?
    public var outcome: Result<RPCResult, RPCError>

    public init(id: Int?, outcome: Result<RPCResult, RPCError>) {
        self.id = id
        self.outcome = outcome
    }
}

/// A result decoded only into the type a command wants (or printed as it came). A lone answer's
/// result stays JSON text: a list of 10,000 jobs never becomes a `JSONValue` tree. A batch's results
/// were read as trees with the rest of their line, and are decoded from the tree, never written
/// out as text again to be read once more.
public struct RPCResult: Equatable, Sendable {
    private enum Form: Sendable {
        case text([UInt8])
        case tree(JSONValue)
    }
    private let form: Form

    public init(json: [UInt8]) { form = .text(json) }

    public init(_ value: JSONValue) { form = .tree(value) }

    /// The result as JSON text.
    public var json: [UInt8] {
        switch form {
        case .text(let text): return text
        case .tree(let value):
            return (try? value.jsonBytes()) ?? Array("null".utf8)
        }
    }

    /// The result parsed, for a reader that goes through it by hand.
    public func value() throws -> JSONValue {
        switch form {
        case .text(let text): return try JSONValue(parsing: text)
        case .tree(let value): return value
        }
    }

    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        switch form {
        case .text(let text): return try JSONCoding.decoder.decode(T.self, from: Data(text))
        case .tree(let value): return try value.decode(T.self)
        }
    }

    /// The same JSON text: a result read one way equals the same result read the other.
    public static func == (lhs: RPCResult, rhs: RPCResult) -> Bool { lhs.json == rhs.json }
}

/// One line from the daemon: answers (one, or a batch's array) or a notification.
public enum IncomingMessage: Sendable {
    case replies([RPCReply])
    case notification(RPCNotification)

    /// Reads one line. Anything that is not JSON-RPC from the daemon is `unexpectedAnswer`.
    public static func decode(line: [UInt8]) throws(ControlClientError) -> IncomingMessage {
        if let reply = resultReply(line) { return .replies([reply]) }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: line)
        } catch {
            throw .unexpectedAnswer("a line that is not JSON: \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
        switch value {
        case .array(let elements):
            var replies: [RPCReply] = []
            replies.reserveCapacity(elements.count)
            for element in elements {
                guard let object = element.objectValue else {
                    throw .unexpectedAnswer("a batch element that is not an object")
                }
                replies.append(try reply(from: object))
            }
            return .replies(replies)
        case .object(let object):
            if object["id"] == nil, case .string(let method)? = object["method"] {
                return .notification(RPCNotification(method: method, params: object["params"] ?? .object([:])))
            }
            return .replies([try reply(from: object)])
        default:
            throw .unexpectedAnswer("a JSON value that is neither an object nor an array")
        }
    }

    private static func reply(from object: [String: JSONValue]) throws(ControlClientError) -> RPCReply {
        var id: Int?
        switch object["id"] {
        case .number(let number)?: id = Int(exactly: number)
        case .string(let text)?: id = Int(text)
        default: id = nil
        }
        if let error = object["error"], error != .null {
            guard let rpcError = try? error.decode(RPCError.self) else {
                throw .unexpectedAnswer("an error object without code and message")
            }
            return RPCReply(id: id, outcome: .failure(rpcError))
        }
        return RPCReply(id: id, outcome: .success(RPCResult(object["result"] ?? .null)))
    }

    private static let resultPrefix = Array(#"{"id":"#.utf8)
    private static let resultInfix = Array(#","jsonrpc":"2.0","result":"#.utf8)

    /// A lone answer exactly as uploadd writes one (`RPCLine`: `{"id":N,"jsonrpc":"2.0","result":…}`)
    /// is cut apart without parsing its result; anything else goes the general way.
    private static func resultReply(_ line: [UInt8]) -> RPCReply? {
        guard line.starts(with: resultPrefix), line.last == UInt8(ascii: "}") else { return nil }
        var index = resultPrefix.count
        var id = 0
        while index < line.count, let digit = line[index].asciiDigit, id < Int.max / 20 {
            id = id * 10 + digit
            index += 1
        }
        guard index > resultPrefix.count, line[index...].starts(with: resultInfix) else { return nil }
        let resultStart = index + resultInfix.count
        guard resultStart < line.count - 1 else { return nil }
        return RPCReply(id: id, outcome: .success(RPCResult(json: Array(line[resultStart..<(line.count - 1)]))))
    }
}

extension UInt8 {
    fileprivate var asciiDigit: Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) ? Int(self - UInt8(ascii: "0")) : nil
    }
}
