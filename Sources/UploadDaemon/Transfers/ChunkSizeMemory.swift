import Foundation
import Synchronization
import UploadCore
import UploadHTTP
import UploadWire

/// The largest chunk each origin took, learned from the chunks it refused (`ChunkRefusal`), for
/// the daemon's life: the next upload to that server starts at a size it takes instead of being
/// refused again. Kept in memory only: a server's limit can change with its configuration, and a
/// restart costs at most one refused chunk per halving.
final class ChunkSizeMemory: Sendable {
    /// The daemon's own.
    static let shared = ChunkSizeMemory()
    /// Origins remembered at most; the oldest goes first. A user uploads to a handful of servers.
    static let capacity = 64

    private let sizes = Mutex<[(origin: Origin, size: Int64)]>([])

    /// The largest chunk to send to `url`'s origin, nil when none was refused there.
    func largest(for url: String) -> Int64? {
        guard let origin = Origin(url) else { return nil }
        return sizes.withLock { $0.first { $0.origin == origin }?.size }
    }

    /// `size` worked (or is the next to try) after a larger chunk was refused at `url`'s origin;
    /// a smaller size already remembered stays.
    func remember(_ size: Int64, for url: String) {
        guard let origin = Origin(url) else { return }
        sizes.withLock { sizes in
            if let index = sizes.firstIndex(where: { $0.origin == origin }) {
                sizes[index].size = min(sizes[index].size, size)
            } else {
                if sizes.count >= Self.capacity { sizes.removeFirst() }
                sizes.append((origin, size))
            }
        }
    }
}

/// A server's refusal of a request body as too large, and the smaller chunk to try next.
///
/// Servers cap a request body in many places: nginx's `client_max_body_size` (1 MiB by default)
/// in front of the server answers 413; Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` (2.5 MiB) answers 400
/// with a bare "Bad Request" page (RequestDataTooBig only goes to its log). For a chunked protocol
/// the body is one chunk, not the file: the chunk is halved, down to `floor`, and sent again.
enum ChunkRefusal {
    /// Halving stops here: a server that refuses 256 KiB has a limit no chunk size fixes (or
    /// refuses something else), and smaller chunks would spend the link on round trips.
    static let floor: Int64 = 256 << 10

    /// Whether `response` refuses the request's body as too large: a 413, or a 400 whose answer
    /// says so. With `bareBadRequest`, a 400 that gives no reason at all counts too (Django's):
    /// only for requests whose headers leave the server nothing else to refuse (a tus PATCH).
    static func refusesBody(_ response: HTTPResponse, bareBadRequest: Bool) -> Bool {
        switch response.status {
        case 413: return true
        case 400:
            let text = TransferFailure.summarize(response.bodyText).lowercased()
            let sayings = [
                "too large", "too big", "toobig", "too long", "exceed", "max_memory_size", "maximum size",
                "size limit", "body limit", "entitytoolarge",
            ]
            if sayings.contains(where: text.contains) { return true }
            guard bareBadRequest else { return false }
            // What is left once the status's own words are gone: nothing means no reason was given.
            let reason = text.replacingOccurrences(of: "bad request", with: "").filter {
                $0.isLetter && !"0123456789".contains($0)
            }
            return reason.isEmpty
        default: return false
        }
    }

    /// The chunk to try after one of `refused` bytes was refused: half of it, at least `floor`;
    /// nil when `refused` is at the floor already.
    static func halved(_ refused: Int64) -> Int64? {
        guard refused > floor else { return nil }
        return max(floor, refused / 2)
    }

    /// The size as `--chunk-size` and `chunk_size` take it: `4M`, `512K`, or bytes.
    static func option(_ size: Int64) -> String {
        if size % (1 << 20) == 0 { return "\(size >> 20)M" }
        if size % (1 << 10) == 0 { return "\(size >> 10)K" }
        return String(size)
    }

    /// The size for people: `4 MiB`, `512 KiB`, else as `ByteSize.format` writes it (`1.50 MiB`).
    static func shown(_ size: Int64) -> String {
        if size >= 1 << 20 && size % (1 << 20) == 0 { return "\(size >> 20) MiB" }
        if size < 1 << 20 && size >= 1 << 10 && size % (1 << 10) == 0 { return "\(size >> 10) KiB" }
        return ByteSize.format(size)
    }

    /// The history line for a refused chunk and the next size tried.
    static func retryNote(refused: Int64, status: Int, next: Int64) -> String {
        "the server refused a chunk of \(shown(refused)) (HTTP \(status)); trying \(shown(next))"
    }

    /// The history line once a smaller chunk went through.
    static func acceptedNote(_ size: Int64) -> String {
        "chunks of \(shown(size)) went through; set --chunk-size \(option(size)) (or chunk_size = \(option(size)) in the remote) to start there"
    }

    /// The hint for a refusal that halving cannot fix: the chunk is at the floor (or was set below it).
    /// A 400 may be about something else: the server's log says.
    static func floorHint(_ size: Int64, status: Int) -> String {
        let limits =
            "raise its limit on request bodies (nginx: client_max_body_size; Django: DATA_UPLOAD_MAX_MEMORY_SIZE), or set --chunk-size (or chunk_size in the remote) smaller"
        if status == 413 { return "the server refuses even a chunk of \(shown(size)): \(limits)" }
        return
            "the server refused a chunk of \(shown(size)) and every larger one; if its log says the request body was too large (Django: RequestDataTooBig), \(limits)"
    }
}
