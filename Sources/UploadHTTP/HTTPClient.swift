import CCurl
import Dispatch
import Foundation
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// HTTP over libcurl: one multi handle driven by one thread, connections reused across requests.
///
/// `send` suspends the calling task until the answer is in; cancelling the task aborts the request
/// at once (the HTTP thread is woken and removes the handle).
///
/// It is a task executor too: a task that prefers it (`Task(executorPreference:)`, a small file's
/// attempt) runs on the HTTP thread between transfer steps, so its requests are handed over and
/// their answers resumed without waking another thread.
package final class HTTPClient: TaskExecutor, Sendable {
    private enum Command: Sendable {
        case add(UncheckedTransfer)
        case cancel(ObjectIdentifier)
        case limit(Int64?)
        case stop
    }

    private struct Inbox {
        var commands: [Command] = []
        /// Tasks to run on the HTTP thread.
        var jobs: [UnownedJob] = []
        /// Set once the thread has stopped: jobs then run on the global executor.
        var stopped = false
    }

    /// The multi handle: used by the HTTP thread only.
    private let multi: MultiHandle
    /// What the HTTP thread waits on: libcurl's sockets and timeout, and wake-ups from other threads.
    private let socketEvents = SocketEvents()
    private let inbox = Mutex(Inbox())
    /// The bandwidth limit last set (0: none), for sizing new requests' upload buffers.
    private let sharedLimit = Atomic<Int64>(0)
    private let stopped = DispatchSemaphore(value: 0)
    /// The HTTP thread, once it runs: what it posts to itself needs no wake-up.
    private let threadID = Atomic<UInt>(0)

    /// Call once at start-up, before any thread uses libcurl.
    package static func globalInit() {
        curl_global_init(CCurl_GLOBAL_ALL)
    }

    package init() {
        multi = MultiHandle()
        socketEvents.attach(to: multi.pointer)
        NamedThread.start("uploadd-http") { [self] in run() }
    }

    /// Sends a request and returns the server's answer, whatever its status. Throws a
    /// `TransferFailure` when no answer came (network, TLS, stall) and CancellationError when canceled.
    package func send(_ request: HTTPRequest, meter: ProgressMeter? = nil) async throws -> HTTPResponse {
        let limit = sharedLimit.load(ordering: .relaxed)
        let curlRequest = try CurlRequest(request, meter: meter, sharedLimit: limit > 0 ? limit : nil)
        let transfer = UncheckedTransfer(curlRequest)
        let id = ObjectIdentifier(curlRequest)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.request.continuation = continuation
                post(.add(transfer))
            }
        } onCancel: {
            transfer.request.isCanceled.store(true, ordering: .relaxed)
            post(.cancel(id))
        }
    }

    /// A limit on all uploads together, bytes per second (nil: none), shared equally among the
    /// requests sending a body, within each one's own limit. Running uploads follow within a second.
    package func setBandwidthLimit(_ rate: Int64?) {
        sharedLimit.store(rate ?? 0, ordering: .relaxed)
        post(.limit(rate))
    }

    /// Finishes every request with a cancellation and stops the thread.
    package func shutdown() {
        post(.stop)
        stopped.wait()
    }

    private func post(_ command: Command) {
        inbox.withLock { $0.commands.append(command) }
        wakeThread()
    }

    /// Runs a task that prefers this executor on the HTTP thread, at its next turn.
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let stopped = inbox.withLock { inbox in
            if !inbox.stopped { inbox.jobs.append(job) }
            return inbox.stopped
        }
        guard stopped else { return wakeThread() }
        runAfterShutdown(job)
    }

    /// After shutdown, a task still finishing (a canceled attempt) runs on the global queue.
    private func runAfterShutdown(_ job: UnownedJob) {
        let executor = asUnownedTaskExecutor()
        DispatchQueue.global().async { job.runSynchronously(on: executor) }
    }

    private func wakeThread() {
        guard threadID.load(ordering: .relaxed) != UInt(pthread_self()) else { return }
        socketEvents.wake()
    }

    // MARK: - The HTTP thread

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        let executor = asUnownedTaskExecutor()
        var active: [ObjectIdentifier: CurlRequest] = [:]
        var stopping = false
        // The bandwidth limit all requests share, and the number sending a body, which their
        // shares of it are worked out from again when it changed (a request came or went).
        let budget = SendBudget()
        var sharesChanged = false
        // Whether any request is under a limit (the global one, or its own): then requests held
        // by them are resumed in turn, from a place that moves each round.
        var pacing = false
        var resumeTurn = 0
        var lastIdleCheck = ContinuousClock.now
        while !stopping {
            // Tasks first: what they send is among the commands taken below.
            let jobs = inbox.withLock { inbox in
                defer { inbox.jobs.removeAll(keepingCapacity: true) }
                return inbox.jobs
            }
            for job in jobs { job.runSynchronously(on: executor) }
            let commands = inbox.withLock { inbox in
                defer { inbox.commands.removeAll() }
                return inbox.commands
            }
            for command in commands {
                switch command {
                case .add(let transfer):
                    let request = transfer.request
                    if request.isCanceled.load(ordering: .relaxed) {
                        finish(request, with: .failure(CancellationError()))
                    } else {
                        active[ObjectIdentifier(request)] = request
                        request.pace(with: budget)
                        curl_multi_add_handle(multi.pointer, request.handle)
                        sharesChanged = true
                    }
                case .cancel(let id):
                    if let request = active.removeValue(forKey: id) {
                        curl_multi_remove_handle(multi.pointer, request.handle)
                        finish(request, with: .failure(CancellationError()))
                        sharesChanged = true
                    }
                case .limit(let rate):
                    budget.setLimit(rate, at: MonotonicClock.seconds())
                    sharesChanged = true
                case .stop:
                    stopping = true
                }
            }
            if sharesChanged {
                budget.senders = active.values.count(where: \.sendsBody)
                pacing = budget.bucket != nil || active.values.contains { $0.request.sendRate != nil }
                sharesChanged = false
            }
            if stopping { break }
            // Answers just resumed tasks of this executor: they run before any wait. With nothing in
            // flight, the thread sleeps until a command or a task arrives (or a timer libcurl set is
            // due), with no periodic wakeups; else at least every `idleCheckInterval`, for the
            // progress and stall check below.
            let jobsWaiting = inbox.withLock { !$0.jobs.isEmpty }
            var longest: Int32 = jobsWaiting ? 0 : active.isEmpty ? -1 : Self.idleCheckMilliseconds
            if pacing, longest > 0, let held = Self.secondsUntilHeldMaySend(active.values) {
                longest = Int32(min(max(held * 1000, 1), Double(longest)).rounded(.up))
            }
            var running: Int32 = 0
            socketEvents.wait(longest: longest) { socket, bits in
                curl_multi_socket_action(multi.pointer, socket, bits, &running)
            }
            if socketEvents.takeDueTimeout() {
                curl_multi_socket_action(multi.pointer, CCurl_SOCKET_TIMEOUT, 0, &running)
            }
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                var privatePointer: UnsafeMutableRawPointer?
                _ = CCurl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &privatePointer)
                guard let privatePointer else { continue }
                let request = Unmanaged<CurlRequest>.fromOpaque(privatePointer).takeUnretainedValue()
                end(request, code: CCurl_message_result(message), active: &active)
                sharesChanged = true
            }
            // libcurl runs a transfer only when its socket is ready or its timer is due: one whose
            // link died is checked here for a stall, as the progress callback would. A slow reader's
            // socket becomes ready only when a megabyte or so has drained: counted here too, what
            // the peer acknowledged moves in small steps, not in jumps that make the speed lie.
            let now = ContinuousClock.now
            if now - lastIdleCheck >= .milliseconds(Self.idleCheckMilliseconds) {
                lastIdleCheck = now
                for request in active.values where request.shouldAbortWhileIdle() {
                    end(request, code: CURLE_ABORTED_BY_CALLBACK, active: &active)
                    sharesChanged = true
                }
            }
            if pacing {
                let socketEvents = socketEvents
                let requests = Array(active.values)
                resumeTurn = (resumeTurn + 1) % max(requests.count, 1)
                for index in requests.indices {
                    requests[(index + resumeTurn) % requests.count].resumeReadingIfReady { socketEvents.wake() }
                }
            } else if !active.isEmpty {
                let socketEvents = socketEvents
                for request in active.values {
                    request.resumeReadingIfReady { socketEvents.wake() }
                }
            }
        }
        for request in active.values {
            curl_multi_remove_handle(multi.pointer, request.handle)
            finish(request, with: .failure(CancellationError()))
        }
        let left = inbox.withLock { inbox in
            inbox.stopped = true
            defer { inbox.jobs.removeAll() }
            return inbox.jobs
        }
        for job in left { runAfterShutdown(job) }
        stopped.signal()
    }

    /// How often requests libcurl does not run are checked for progress and stalls.
    private static let idleCheckMilliseconds: Int32 = 250

    /// The soonest a request held by the bandwidth limits may send again, in seconds; nil when
    /// none is held.
    private static func secondsUntilHeldMaySend(_ requests: Dictionary<ObjectIdentifier, CurlRequest>.Values)
        -> Double?
    {
        let now = MonotonicClock.seconds()
        return requests.lazy.compactMap { $0.secondsUntilSendAllowed(at: now) }.min()
    }

    /// Takes a request off the multi handle and resumes its task with what `code` means: finished
    /// by libcurl, or aborted by the HTTP thread's stall check (CURLE_ABORTED_BY_CALLBACK, as the
    /// progress callback's abort would be).
    private func end(_ request: CurlRequest, code: CURLcode, active: inout [ObjectIdentifier: CurlRequest]) {
        curl_multi_remove_handle(multi.pointer, request.handle)
        active[ObjectIdentifier(request)] = nil
        if request.isCanceled.load(ordering: .relaxed) {
            finish(request, with: .failure(CancellationError()))
        } else if let failure = request.failure(for: code) ?? request.incompleteAnswer {
            finish(request, with: .failure(failure))
        } else {
            request.countAllSent()
            finish(request, with: .success(request.response()))
        }
    }

    private func finish(_ request: CurlRequest, with result: Result<HTTPResponse, any Error>) {
        let continuation = request.continuation
        request.continuation = nil
        continuation?.resume(with: result)
    }
}

/// Owns the CURLM handle for the client's lifetime.
private final class MultiHandle: @unchecked Sendable {
    // Invariant: only the HTTP thread calls into the handle, except curl_multi_wakeup, which
    // libcurl documents as safe to call from any thread.
    let pointer: UnsafeMutableRawPointer

    init() {
        pointer = curl_multi_init()
        _ = CCurl_multi_setopt_long(pointer, CURLMOPT_MAXCONNECTS, 32)
    }

    deinit { curl_multi_cleanup(pointer) }
}

/// Carries a CurlRequest into the cancellation handler and the continuation closure.
private struct UncheckedTransfer: @unchecked Sendable {
    // Invariant: `continuation` is set before the request is posted to the HTTP thread; after that
    // only the HTTP thread touches the request, and the cancellation handler only touches the atomic flag.
    let request: CurlRequest
    init(_ request: CurlRequest) { self.request = request }
}
