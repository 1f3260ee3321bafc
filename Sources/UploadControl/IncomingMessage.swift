import Foundation
import UploadCore

/// The daemon's answer to one request.
struct RPCReply: Equatable, Sendable {
    /// The request's id, or nil when the daemon could not tell which request it answers (a parse error).
    var id: Int?
    var outcome: Result<JSONValue, RPCError>
}

/// One line from the daemon: answers (one, or a batch's array) or a notification.
enum IncomingMessage: Sendable {
    case replies([RPCReply])
    case notification(RPCNotification)

    /// Reads one line. Anything that is not JSON-RPC from the daemon is `unexpectedAnswer`.
    static func decode(line: [UInt8]) throws(ControlClientError) -> IncomingMessage {
        let value: JSONValue
        do {
            value = try JSONCoding.decoder.decode(JSONValue.self, from: Data(line))
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
        return RPCReply(id: id, outcome: .success(object["result"] ?? .null))
    }
}
