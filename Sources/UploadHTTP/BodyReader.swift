import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// Streams one request body (or one multipart file part) to libcurl's read callback.
///
/// Used only on the HTTP thread once the request is submitted.
package final class BodyReader {
    package enum Source {
        case bytes([UInt8])
        case file(FileRegion)
    }

    package let source: Source
    private(set) var position: Int64 = 0
    /// Set when the source file could not be read or has changed, so the failure names the file,
    /// not libcurl.
    private(set) var readError: TransferFailure?

    package init(_ source: Source) {
        self.source = source
    }

    package var length: Int64 {
        switch source {
        case .bytes(let bytes): return Int64(bytes.count)
        case .file(let region): return region.length
        }
    }

    /// What `read` returns when the next bytes of the file are not copied yet (`GrowingCopy`), or
    /// may not be sent yet (the bandwidth limit): the request pauses (CURL_READFUNC_PAUSE) until
    /// `resumeIfReady` finds them there, or allowed.
    package static let notReady = -2
    /// Whether the last `read` returned `notReady`, and whether a wake-up is asked for since.
    private(set) var waitsForCopy = false
    private var wakeArmed = false
    /// What the bandwidth limits allow this request to send (set on the HTTP thread before the
    /// transfer starts), and whether the last `read` was held by them.
    package var pacer: SendPacer?
    private(set) var waitsForBandwidth = false

    /// Copies the next bytes into `buffer`; 0 at the end; -1 on a read error; `notReady`.
    package func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        var wanted = Int(min(Int64(capacity), length - position))
        guard wanted > 0 else { return 0 }
        var now = 0.0
        if let pacer, pacer.isLimited {
            now = MonotonicClock.seconds()
            wanted = pacer.allowance(wanted, at: now)
            guard wanted > 0 else {
                waitsForBandwidth = true
                return Self.notReady
            }
        }
        let count: Int
        switch source {
        case .bytes(let bytes):
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + Int(position), byteCount: wanted) }
            count = wanted
        case .file(let region):
            guard region.file.isReady(at: region.offset + position) else {
                waitsForCopy = true
                return Self.notReady
            }
            count = region.file.read(into: buffer, count: wanted, at: region.offset + position)
            if count < 0 {
                readError = .source(SystemError("read", path: region.file.displayPath).description)
                return -1
            }
            // The last bytes go out only while the file is still what `add` saw: a file changed
            // during the upload never reaches the server as a whole body (and one cut short says so).
            if count == 0 || position + Int64(count) == length {
                do {
                    try region.file.verifyUnchanged()
                } catch {
                    readError = error
                    return -1
                }
            }
            if count == 0 {
                readError = .source(SystemError("read", path: region.file.displayPath, errno: EIO).description)
                return -1
            }
        }
        position += Int64(count)
        if now > 0 { pacer?.spend(count, at: now) }
        return count
    }

    /// For a reader paused by `notReady`: true once its next bytes are copied (the caller then
    /// unpauses the request); else `wake` is called when they may be, once per pause.
    package func resumeIfReady(wake: @escaping @Sendable () -> Void) -> Bool {
        if waitsForBandwidth {
            guard let pacer, pacer.secondsUntilAllowed(at: MonotonicClock.seconds()) == 0 else { return false }
            waitsForBandwidth = false
            return true
        }
        guard waitsForCopy, case .file(let region) = source else { return false }
        let offset = region.offset + position
        if region.file.isReady(at: offset) {
            waitsForCopy = false
            wakeArmed = false
            return true
        }
        if !wakeArmed {
            wakeArmed = true
            region.file.wake(whenReadyAt: offset, wake)
        }
        return false
    }

    /// Moves to `offset` (libcurl rewinds to resend a body).
    package func seek(to offset: Int64) -> Bool {
        guard offset >= 0, offset <= length else { return false }
        position = offset
        return true
    }
}
