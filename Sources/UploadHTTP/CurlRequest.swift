import CCurl
import CShims
import Foundation
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// One libcurl easy handle and everything its callbacks touch.
///
/// Threading: built on the caller's thread, then owned by the HTTP thread from `submit` until it
/// finishes; only `isCanceled` is touched from other threads.
package final class CurlRequest {
    package let request: HTTPRequest
    package let handle: UnsafeMutableRawPointer
    package let isCanceled = Atomic<Bool>(false)
    package var continuation: CheckedContinuation<HTTPResponse, any Error>?

    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var mime: OpaquePointer?
    /// The readers for the body or the multipart file parts; libcurl holds unretained pointers to them.
    private var readers: [BodyReader] = []
    /// libcurl writes its detailed error text here; it must outlive the handle's use.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    /// A short body sent with the head (`attachBodyToHead`); libcurl points into it until the
    /// handle is given back.
    private var headBody: UnsafeMutableRawPointer?
    private(set) var responseHeaders: [KeyValue] = []
    private(set) var responseBody: [UInt8] = []
    /// The status lines of the answers, interim ones (100 Continue) first: the final one's reason phrase.
    private(set) var statusLines: [String] = []
    /// Whether the last answer's head ended with its blank line: libcurl reports success for a
    /// connection closed in the middle of the headers.
    private(set) var headersComplete = false
    /// Stall detection: the bytes moved so far and when that last changed (monotonic seconds).
    private var lastProgressBytes: Int64 = -1
    private var lastProgressAt: Double = 0
    private(set) var stalled = false
    /// When the whole request had been handed over (monotonic seconds), for the response deadline.
    private var requestSentAt: Double?
    /// What the bandwidth limits let it send (`pace(with:)`), for a request that sends a body.
    private var pacer: SendPacer?
    /// The minimum-speed check: bytes moved and when, at the start of the window it measures.
    private var speedWindow: (start: Double, bytes: Int64)?
    private(set) var tooSlow: (speed: Double, seconds: Int)?
    private(set) var answerTimedOut = false
    /// The socket of a connection opened for this request, and its inode number, which tells it
    /// from a later file under the same number once libcurl closed it (see `curlSocketOpened`).
    fileprivate var connectionSocket: (fd: Int32, inode: UInt64)?
    /// The socket's unsent bytes when last asked (`unsentBytes`), what had been handed over then,
    /// and when.
    private var unsentAsked: (bytes: Int64, handedOver: Int64, at: Double)?
    /// Where the bytes of this request that reached the wire are counted (`bytes_sent`), and how
    /// many of them were counted so far.
    private let meter: ProgressMeter?
    private var countedOnWire: Int64 = 0
    /// The upload buffer asked of libcurl (which keeps it with the handle, see `EasyHandlePool`).
    private var uploadBufferSize = Int.max

    /// `sharedLimit`: the global bandwidth limit when the request is made, which sizes the upload
    /// buffer as its own limit does (the buffer cannot change once the transfer runs).
    package init(_ request: HTTPRequest, meter: ProgressMeter?, sharedLimit: Int64? = nil) throws(TransferFailure) {
        guard let handle = EasyHandlePool.take() else { throw .network("libcurl could not create a handle") }
        self.request = request
        self.handle = handle
        self.meter = meter
        try configure(meter: meter, sharedLimit: sharedLimit)
    }

    deinit {
        let (headerList, mime, errorBuffer, headBody) = (headerList, mime, errorBuffer, headBody)
        EasyHandlePool.giveBack(handle, uploadBufferSize: uploadBufferSize) {
            if let headerList { curl_slist_free_all(headerList) }
            if let mime { curl_mime_free(mime) }
            errorBuffer.deallocate()
            headBody?.deallocate()
        }
    }

    /// Whether it uploads a body (a share of the global bandwidth limit goes to those only; a
    /// multipart body's length is -1 until libcurl works it out, and it counts).
    package var sendsBody: Bool { request.body.sizeHint > 0 }

    /// Puts the request under the bandwidth limits: the global `budget` and its own
    /// `sendRate`. On the HTTP thread, before the handle is added. A body already in memory
    /// with the head (made before a limit was set) is counted against them as it goes.
    package func pace(with budget: SendBudget) {
        guard sendsBody else { return }
        let now = MonotonicClock.seconds()
        let pacer = SendPacer(budget: budget, own: request.sendRate)
        self.pacer = pacer
        for reader in readers { reader.pacer = pacer }
        if headBody != nil, pacer.isLimited, request.body.length > 0 {
            pacer.spend(Int(request.body.length), at: now)
        }
    }

    /// The socket libcurl moves this request's bytes on (a kept connection's too).
    package func uses(_ socket: Int32) {
        guard connectionSocket?.fd != socket else { return }
        connectionSocket = (socket, CShims_socket_inode(socket))
    }

    /// Seconds until a read held by the bandwidth limits may go; nil when none is held.
    package func secondsUntilSendAllowed(at now: Double) -> Double? {
        guard let pacer, readers.contains(where: \.waitsForBandwidth) else { return nil }
        return pacer.secondsUntilAllowed(at: now)
    }

    /// 2 MiB, or a quarter second's worth under a rate limit, or the body's size when it is
    /// smaller (at least libcurl's 16 KiB).
    ///
    /// libcurl limits the rate by sending a whole buffer and then pausing: at 512 KiB/s a 2 MiB
    /// buffer went out at once and then nothing moved for four seconds, which the stall detector
    /// took for a dead connection, and progress jumped in 2 MiB steps. A small file's request
    /// allocated 2 MiB of its own, mapped and unmapped for each file.
    package static func uploadBufferSize(rateLimit: Int64?, bodyLength: Int64) -> Int {
        let wanted = rateLimit.map { min(2 << 20, $0 / 4) } ?? 2 << 20
        return Int(max(16 << 10, min(wanted, bodyLength)))
    }

    /// Unpauses the request when a body paused for bytes not yet copied can go on (on the HTTP
    /// thread, between calls to curl_multi_perform); else `wake` comes when it may.
    package func resumeReadingIfReady(wake: @escaping @Sendable () -> Void) {
        for reader in readers where reader.resumeIfReady(wake: wake) {
            _ = curl_easy_pause(handle, CCurl_PAUSE_CONT)
        }
    }

    /// The failure of a finished transfer, or nil when it got an answer.
    package func failure(for code: CURLcode) -> TransferFailure? {
        if code == CURLE_OK { return nil }
        // A request that wanted the head alone stopped at the body's first byte: it got its answer.
        if code == CURLE_WRITE_ERROR && request.headersOnly && headersComplete { return nil }
        let detail = String(cString: errorBuffer)
        let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        let target = "\(request.method) \(Redaction.redactURL(request.url))"
        if let readError = readers.lazy.compactMap(\.readError).first { return readError }
        if stalled { return .stalled(seconds: request.stallTimeout) }
        if let tooSlow {
            return TransferFailure(
                JobError(
                    code: "stalled",
                    message:
                        "\(target): the server took \(ByteSize.formatRate(tooSlow.speed)) for \(tooSlow.seconds)s, under min_speed (\(ByteSize.formatRate(Double(request.minSpeed)))); trying again later (min_speed = 0 in the config turns this off)"
                ), retryable: true)
        }
        if answerTimedOut {
            return .timeout("\(target): no complete answer \(request.responseTimeout) s after the request was sent")
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout("\(target): \(text)")
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return .config("\(target): \(text)")
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return .tls("\(target): \(text)")
        case CURLE_SSL_CONNECT_ERROR:
            return .tls("\(target): \(text)")
        default:
            return .network("\(target): \(text)")
        }
    }

    package var status: Int {
        var code = 0
        _ = CCurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    package func response() -> HTTPResponse {
        HTTPResponse(status: status, headers: responseHeaders, body: responseBody, statusLines: statusLines)
    }

    /// The failure of a transfer libcurl called a success, when its answer was cut short.
    package var incompleteAnswer: TransferFailure? {
        guard !headersComplete else { return nil }
        return .network(
            "\(request.method) \(Redaction.redactURL(request.url)): the connection closed before the answer's headers ended"
        )
    }

    /// What the progress callback was told last: bytes handed over either way, uploaded, to upload.
    private var lastCounts: (handedOver: Int64, uploaded: Int64, uploadTotal: Int64) = (0, 0, 0)

    /// The progress callback's checks for a transfer libcurl has not run for a second: its socket
    /// is not ready (a dead link, a server that stopped reading), so libcurl calls nothing of it.
    /// True: the HTTP thread ends it, with `failure(for: CURLE_ABORTED_BY_CALLBACK)`.
    package func shouldAbortWhileIdle() -> Bool {
        shouldAbort(
            handedOver: lastCounts.handedOver, uploaded: lastCounts.uploaded, uploadTotal: lastCounts.uploadTotal)
    }

    /// Called on every transfer step, and by the HTTP thread every quarter second: true aborts the transfer, when it
    /// was canceled or no byte moved either way for `stallTimeout` seconds.
    ///
    /// Bytes count as moved when the peer acknowledged them, not when libcurl handed them to the
    /// kernel: a slow link drains the socket's send buffer slowly but steadily, and is not a stall.
    fileprivate func shouldAbort(handedOver: Int64, uploaded: Int64, uploadTotal: Int64) -> Bool {
        lastCounts = (handedOver, uploaded, uploadTotal)
        if isCanceled.load(ordering: .relaxed) { return true }
        // libcurl's CURLINFO_ACTIVESOCKET is -1 in the middle of a multi transfer, so the socket
        // comes from the sockopt callback (a reused connection has none: then what libcurl
        // handed over is all we know).
        let seconds = MonotonicClock.seconds()
        let unsent = unsentBytes(handedOver: handedOver, at: seconds)
        let movedBytes = handedOver - unsent
        countOnWire(max(uploaded - unsent, 0))
        // A multipart body's length is libcurl's to work out: until it has (an upload total of 0,
        // as before the connection is made), nothing is sent yet, and the answer's deadline waits.
        let sent =
            request.body.length >= 0
            ? uploaded >= request.body.length : uploadTotal > 0 && uploaded >= uploadTotal
        if requestSentAt == nil && sent { requestSentAt = seconds }
        if let sentAt = requestSentAt, seconds - sentAt >= Double(request.responseTimeout) {
            answerTimedOut = true
            return true
        }
        // Held by uploadd's own bandwidth limit (or waiting for its copy to be made) is never
        // the connection's fault: the stall and minimum-speed clocks start again.
        let heldByUs =
            pacer?.wasHeld(within: 2, at: seconds) == true || readers.contains { $0.waitsForCopy }
        if movedBytes != lastProgressBytes || heldByUs {
            lastProgressBytes = movedBytes
            lastProgressAt = seconds
        } else if seconds - lastProgressAt >= Double(request.stallTimeout) {
            stalled = true
            return true
        }
        // Delivered, not handed over: a slow reader's socket buffers hold megabytes.
        let total = request.body.length >= 0 ? request.body.length : uploadTotal
        let delivered = total > 0 && uploaded - unsent >= total
        if isTooSlow(movedBytes: movedBytes, delivered: delivered, heldByUs: heldByUs, at: seconds) { return true }
        return false
    }

    /// The minimum-speed rule, as curl's `--speed-limit`/`--speed-time`: a body sent at under
    /// `minSpeed` bytes per second for `minSpeedTime` seconds is too slow. A stall (no byte at
    /// all) ends a connection after a minute, but a server that reads a trickle on purpose or
    /// from overload never stalls and held a transfer slot for hours. Measured while the body is
    /// going out and nothing of uploadd's holds it back: a window in which uploadd's own limit
    /// held the request, or one that allows it less than twice the minimum, does not count.
    private func isTooSlow(movedBytes: Int64, delivered: Bool, heldByUs: Bool, at now: Double) -> Bool {
        let minimum = request.minSpeed
        // The pacer's rate last: it is asked on every progress call of every small file.
        guard minimum > 0, request.minSpeedTime > 0, sendsBody, !delivered, !heldByUs,
            pacer?.rate.map({ $0 < 2 * minimum }) != true
        else {
            speedWindow = nil
            return false
        }
        guard let window = speedWindow else {
            speedWindow = (now, movedBytes)
            return false
        }
        let elapsed = now - window.start
        guard elapsed >= Double(request.minSpeedTime) else { return false }
        let speed = Double(movedBytes - window.bytes) / elapsed
        if speed < Double(minimum) {
            tooSlow = (speed, Int(elapsed.rounded()))
            return true
        }
        speedWindow = (now, movedBytes)
        return false
    }

    /// What waits in the socket's send queue, asked of the kernel (an fstat and an ioctl) at most
    /// every `unsentQueryInterval`, the first time that long after the request's first progress
    /// call: asked on every call, it was ~7% of the daemon's CPU with small files, whose requests
    /// are over in a few milliseconds (their bytes are counted when the answer comes,
    /// `countAllSent`). Between two asks, whatever was handed over since the last is taken as
    /// still queued (as all of it is before the first): the bytes on the wire stay as the last ask
    /// found them, never more, and never go back but when libcurl sends the body again. A stall,
    /// or a slow link draining the queue, is seen `unsentQueryInterval` later at most.
    private func unsentBytes(handedOver: Int64, at seconds: Double) -> Int64 {
        guard let socket = connectionSocket else { return 0 }
        guard let asked = unsentAsked, seconds - asked.at >= Self.unsentQueryInterval else {
            let asked = unsentAsked ?? (bytes: handedOver, handedOver: handedOver, at: seconds)
            if unsentAsked == nil { unsentAsked = asked }
            return min(max(asked.bytes + handedOver - asked.handedOver, 0), handedOver)
        }
        let bytes = Int64(max(CShims_unsent_bytes(socket.fd, socket.inode), 0))
        unsentAsked = (bytes, handedOver, seconds)
        return bytes
    }

    /// The answer came: the body's bytes all reached the server, whatever the last look at the
    /// socket's queue found.
    package func countAllSent() {
        countOnWire(lastCounts.uploaded)
    }

    static let unsentQueryInterval = 0.1

    /// Progress as curl counts it: bytes of the body the peer acknowledged (handed to the kernel,
    /// minus what still waits in the socket's send queue), not bytes read from the file, which run
    /// up to a whole upload buffer ahead. A body sent again (curl rewinds) counts down first.
    private func countOnWire(_ onWire: Int64) {
        guard let meter, onWire != countedOnWire else { return }
        if onWire > countedOnWire {
            meter.add(Int(onWire - countedOnWire))
        } else {
            meter.rewind(by: countedOnWire - onWire)
        }
        countedOnWire = onWire
    }

    // MARK: Callbacks' entry points

    /// False stops the transfer: a request that wants the head alone (`headersOnly`).
    fileprivate func appendBody(_ pointer: UnsafeRawPointer, _ count: Int) -> Bool {
        if request.headersOnly { return false }
        let room = request.maxResponseBytes - responseBody.count
        if room > 0 { responseBody.append(contentsOf: UnsafeRawBufferPointer(start: pointer, count: min(room, count))) }
        return true
    }

    /// One header line as curl hands it over (with its CRLF). Parsed as bytes: Foundation's
    /// trimming bridged every line through NSString, which showed in the profile of many small PUTs.
    fileprivate func appendHeaderLine(_ line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            statusLines.append(String(decoding: Self.trimmed(line[...]), as: UTF8.self))
            responseHeaders.removeAll()  // a new response (after 100 Continue or a redirect)
            headersComplete = false
            return
        }
        if line.elementsEqual("\r\n".utf8) || line.elementsEqual("\n".utf8) {
            headersComplete = true
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = Self.trimmed(line[..<colon])
        let value = Self.trimmed(line[(colon + 1)...])
        responseHeaders.append(
            KeyValue(
                name: String(decoding: UnsafeRawBufferPointer(rebasing: name), as: UTF8.self).lowercased(),
                value: String(decoding: UnsafeRawBufferPointer(rebasing: value), as: UTF8.self)))
    }

    /// Without the spaces, tabs and line ends around it (HTTP's optional whitespace).
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
    }

    // MARK: Configuration

    private func configure(meter: ProgressMeter?, sharedLimit: Int64?) throws(TransferFailure) {
        let opaqueSelf = Unmanaged.passUnretained(self).toOpaque()
        // `what` is only worked out for the error (the URL's redaction scans it, for every request).
        func set(_ result: CURLcode, _ what: @autoclosure () -> String) throws(TransferFailure) {
            if result != CURLE_OK {
                throw .config("libcurl refused \(what()): \(String(cString: curl_easy_strerror(result)))")
            }
        }
        try set(
            CCurl_easy_setopt_string(handle, CURLOPT_URL, request.url), "the URL \(Redaction.redactURL(request.url))")
        try set(CCurl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "the protocols")
        errorBuffer[0] = 0
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = CCurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = CCurl_easy_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
        _ = CCurl_easy_setopt_long(
            handle, CURLOPT_HTTP_VERSION, request.http2 ? CCurl_HTTP_VERSION_2TLS : CCurl_HTTP_VERSION_1_1)
        _ = CCurl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, request.connectTimeout)
        uploadBufferSize = Self.uploadBufferSize(
            rateLimit: [request.sendRate?.bytesPerSecond, sharedLimit].compactMap { $0 }.min(),
            bodyLength: request.body.sizeHint)
        _ = CCurl_easy_setopt_long(handle, CURLOPT_UPLOAD_BUFFERSIZE, uploadBufferSize)
        _ = CCurl_easy_setopt_string(handle, CURLOPT_USERAGENT, Self.userAgent)
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_PRIVATE, opaqueSelf)
        _ = CCurl_easy_setopt_write_function(handle, curlWrite)
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, opaqueSelf)
        _ = CCurl_easy_setopt_header_function(handle, curlHeader)
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, opaqueSelf)
        _ = CCurl_easy_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
        _ = CCurl_easy_setopt_xferinfo_function(handle, curlProgress)
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_XFERINFODATA, opaqueSelf)
        _ = CCurl_easy_setopt_sockopt_function(handle, curlSocketOpened)
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_SOCKOPTDATA, opaqueSelf)
        if let caFile = request.caFile { try set(CCurl_easy_setopt_string(handle, CURLOPT_CAINFO, caFile), "ca_file") }
        if let credentials = request.credentials {
            _ = CCurl_easy_setopt_long(handle, CURLOPT_HTTPAUTH, CCurl_AUTH_BASIC)
            _ = CCurl_easy_setopt_string(handle, CURLOPT_USERNAME, credentials.user)
            _ = CCurl_easy_setopt_string(handle, CURLOPT_PASSWORD, credentials.password)
        }
        for header in request.headers { headerList = curl_slist_append(headerList, "\(header.name): \(header.value)") }
        // Expect: 100-continue costs a round trip per request; below 1 MiB sending the body at once
        // is cheaper than waiting for the server's go-ahead (what an early 401 would save).
        if request.body.length >= 0 && request.body.length < 1 << 20
            && !request.headers.contains(where: { $0.name.lowercased() == "expect" })
        {
            headerList = curl_slist_append(headerList, "Expect:")
        }

        switch (request.method, request.body) {
        case ("HEAD", _):
            _ = CCurl_easy_setopt_long(handle, CURLOPT_NOBODY, 1)
        case (_, .none):
            if request.method == "POST" || request.method == "PUT" || request.method == "PATCH" {
                attachBody(BodyReader(.bytes([])))
            }
            if request.method != "GET" { _ = CCurl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method) }
        case (_, .bytes(let bytes)) where sendsWithHead(length: bytes.count, sharedLimit: sharedLimit):
            try attachBodyToHead(length: bytes.count) { $0.copyMemory(from: bytes, byteCount: bytes.count) }
        case (_, .bytes(let bytes)):
            attachBody(BodyReader(.bytes(bytes)))
        case (_, .file(let region))
        where !region.file.isBeingCopied
            && sendsWithHead(length: Int(clamping: region.length), sharedLimit: sharedLimit):
            try attachBodyToHead(length: Int(region.length)) { buffer throws(TransferFailure) in
                try Self.readWhole(region, into: buffer)
            }
        case (_, .file(let region)):
            attachBody(BodyReader(.file(region)))
        case (_, .multipart(let parts)):
            try attachMultipart(parts, meter: meter)
        }
        _ = CCurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList)
    }

    /// An upload body of known length, for any method (PUT, POST, PATCH).
    private func attachBody(_ reader: BodyReader) {
        readers.append(reader)
        let opaqueReader = Unmanaged.passUnretained(reader).toOpaque()
        _ = CCurl_easy_setopt_read_function(handle, curlRead)
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_READDATA, opaqueReader)
        _ = CCurl_easy_setopt_seek_function(handle, curlSeek)
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_SEEKDATA, opaqueReader)
        if request.method == "POST" {
            _ = CCurl_easy_setopt_long(handle, CURLOPT_POST, 1)
            _ = CCurl_easy_setopt_int64(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(reader.length))
        } else {
            _ = CCurl_easy_setopt_long(handle, CURLOPT_UPLOAD, 1)
            _ = CCurl_easy_setopt_int64(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(reader.length))
            if request.method != "PUT" { _ = CCurl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method) }
        }
    }

    /// Made once: each request interpolated it afresh.
    private static let userAgent = "uploadd/\(UploaddVersion.string)"

    /// Bodies shorter than this go out in the same send as the request's head: libcurl appends
    /// POSTFIELDS under 64 KiB to the head it sends, where a body from the read callback goes in
    /// a send of its own. For a small file that was two sends, two segments and two wake-ups of
    /// the server where one does.
    package static let headBodyLimit = 64 << 10

    /// Whether a body of `length` bytes goes out with the head: when it is short, and sent at full
    /// speed (a rate limit paces the bytes libcurl reads, which these are not).
    private func sendsWithHead(length: Int, sharedLimit: Int64?) -> Bool {
        length > 0 && length < Self.headBodyLimit && request.sendRate == nil && sharedLimit == nil
    }

    /// A body held in memory and handed to libcurl as POSTFIELDS (which it does not copy: the
    /// memory is the request's until the handle is given back), for any method.
    private func attachBodyToHead(
        length: Int, fill: (UnsafeMutableRawPointer) throws(TransferFailure) -> Void
    ) throws(TransferFailure) {
        let body = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 16)
        headBody = body
        try fill(body)
        _ = CCurl_easy_setopt_int64(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(length))
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_POSTFIELDS, body)
        if request.method != "POST" { _ = CCurl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method) }
        // libcurl names POSTFIELDS form data unless told a type; an empty header sends none.
        if !request.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headerList = curl_slist_append(headerList, "Content-Type:")
        }
    }

    /// Reads a whole region, checking as a request body's last read does that the file is still
    /// what `add` saw.
    private static func readWhole(_ region: FileRegion, into buffer: UnsafeMutableRawPointer) throws(TransferFailure) {
        var done: Int64 = 0
        while done < region.length {
            let count = region.file.read(
                into: buffer + Int(done), count: Int(region.length - done), at: region.offset + done)
            if count < 0 { throw .source(SystemError("read", path: region.file.displayPath).description) }
            if count == 0 { break }
            done += Int64(count)
        }
        try region.file.verifyUnchanged()
        if done < region.length {
            throw .source(SystemError("read", path: region.file.displayPath, errno: EIO).description)
        }
    }

    /// multipart/form-data through libcurl's MIME API; file parts stream through data callbacks.
    private func attachMultipart(_ parts: [MultipartPart], meter: ProgressMeter?) throws(TransferFailure) {
        mime = curl_mime_init(handle)
        for part in parts {
            let mimePart = curl_mime_addpart(mime)
            switch part {
            case .field(let name, let value):
                curl_mime_name(mimePart, name)
                curl_mime_data(mimePart, value, value.utf8.count)
            case .file(let name, let fileName, let contentType, let region):
                let reader = BodyReader(.file(region))
                readers.append(reader)
                curl_mime_name(mimePart, name)
                curl_mime_filename(mimePart, fileName)
                curl_mime_type(mimePart, contentType)
                let result = curl_mime_data_cb(
                    mimePart, curl_off_t(region.length), curlRead, curlSeek, nil,
                    Unmanaged.passUnretained(reader).toOpaque())
                if result != CURLE_OK {
                    throw .config("libcurl refused a multipart part: \(String(cString: curl_easy_strerror(result)))")
                }
            }
        }
        _ = CCurl_easy_setopt_mime(handle, mime)
        if request.method != "POST" { _ = CCurl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method) }
    }
}

@available(*, unavailable)
extension CurlRequest: Sendable {}

// MARK: - C callbacks: they capture nothing; context arrives through the *DATA pointers.

private let curlRead: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    buffer, size, count, userdata in
    guard let buffer, let userdata else { return CCurl_READFUNC_ABORT }
    let reader = Unmanaged<BodyReader>.fromOpaque(userdata).takeUnretainedValue()
    let result = reader.read(into: buffer, capacity: size * count)
    if result == BodyReader.notReady { return CCurl_READFUNC_PAUSE }
    return result < 0 ? CCurl_READFUNC_ABORT : result
}

private let curlSeek: @convention(c) (UnsafeMutableRawPointer?, curl_off_t, Int32) -> Int32 = {
    userdata, offset, origin in
    guard let userdata, origin == SEEK_SET else { return Int32(CCurl_SEEKFUNC_FAIL) }
    let reader = Unmanaged<BodyReader>.fromOpaque(userdata).takeUnretainedValue()
    return reader.seek(to: Int64(offset)) ? Int32(CCurl_SEEKFUNC_OK) : Int32(CCurl_SEEKFUNC_FAIL)
}

private let curlWrite: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    pointer, size, count, userdata in
    guard let pointer, let userdata else { return 0 }
    let wanted = Unmanaged<CurlRequest>.fromOpaque(userdata).takeUnretainedValue().appendBody(pointer, size * count)
    return wanted ? size * count : 0
}

private let curlHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    pointer, size, count, userdata in
    guard let pointer, let userdata else { return 0 }
    Unmanaged<CurlRequest>.fromOpaque(userdata).takeUnretainedValue()
        .appendHeaderLine(UnsafeRawBufferPointer(start: pointer, count: size * count))
    return size * count
}

private let curlProgress:
    @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> Int32 = {
        userdata, _, downloaded, uploadTotal, uploaded in
        guard let userdata else { return 0 }
        let request = Unmanaged<CurlRequest>.fromOpaque(userdata).takeUnretainedValue()
        let abort = request.shouldAbort(
            handedOver: Int64(downloaded) + Int64(uploaded), uploaded: Int64(uploaded), uploadTotal: Int64(uploadTotal))
        return abort ? 1 : 0
    }

private let curlSocketOpened: @convention(c) (UnsafeMutableRawPointer?, curl_socket_t, curlsocktype) -> Int32 = {
    userdata, socket, purpose in
    if let userdata, purpose == CURLSOCKTYPE_IPCXN {
        Unmanaged<CurlRequest>.fromOpaque(userdata).takeUnretainedValue().connectionSocket = (
            socket, CShims_socket_inode(socket)
        )
    }
    return 0  // CURL_SOCKOPT_OK
}
