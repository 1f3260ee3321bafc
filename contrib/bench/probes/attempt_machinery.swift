// What an upload attempt's task machinery costs by itself, with no transfer and no bookkeeping:
// a task that prefers a thread of its own (as a small file's attempt prefers the HTTP thread), a
// continuation that thread resumes (the request's answer), a cancellation handler, and the hop to
// an actor to hear of the end and start the next (the scheduler). Eight run at once.
//
//     swiftc -O -parse-as-library -swift-version 6 attempt_machinery.swift -o /tmp/attempt_machinery
//     /tmp/attempt_machinery
//
// Session 16, on the 2-core bench machine: 1.2-1.9 us of CPU an attempt (8 runs of 200,000), against
// ~122 us of daemon CPU per 4 KiB file: taking the task out of small files' attempts would save
// ~1-2%, not the fifth that 1.0x curl -Z needs (bench README, "Targets missed").

import Foundation
import Synchronization

/// A thread that runs the tasks that prefer it and answers their requests, as the HTTP thread does.
final class AnsweringThread: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var requests: [CheckedContinuation<Int, any Error>] = []

    init() {
        Thread { [self] in run() }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock { jobs.append(job) }
        condition.signal()
    }

    func send(answering request: CheckedContinuation<Int, any Error>) {
        condition.withLock { requests.append(request) }
        condition.signal()
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty && requests.isEmpty { condition.wait() }
            let (ready, answered) = (jobs, requests)
            jobs.removeAll(keepingCapacity: true)
            requests.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in ready { job.runSynchronously(on: executor) }
            for request in answered { request.resume(returning: 200) }
        }
    }
}

/// Starts attempts, hears of their ends and starts the next, as the scheduler does.
actor Starter {
    private let thread: AnsweringThread
    private let total: Int
    private var running = 0
    private var ended = 0
    private var allEnded: CheckedContinuation<Void, Never>?

    init(thread: AnsweringThread, total: Int) {
        self.thread = thread
        self.total = total
    }

    func start(_ count: Int) {
        for _ in 0..<count { startOne() }
    }

    func untilAllEnded() async {
        await withCheckedContinuation { allEnded = $0 }
    }

    private func startOne() {
        guard ended + running < total else { return }
        running += 1
        let thread = thread
        Task(executorPreference: thread) { [weak self] in
            let canceled = Atomic<Bool>(false)
            let status = try? await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { thread.send(answering: $0) }
            } onCancel: {
                canceled.store(true, ordering: .relaxed)
            }
            await self?.attemptEnded(status ?? 0)
        }
    }

    private func attemptEnded(_ status: Int) {
        running -= 1
        ended += 1
        if ended == total { return allEnded?.resume() ?? () }
        startOne()
    }
}

@main
struct AttemptMachinery {
    static func main() async {
        let attempts = 200_000
        let starter = Starter(thread: AnsweringThread(), total: attempts)
        let (cpuStart, wallStart) = (clock(), Date())
        await starter.start(8)
        await starter.untilAllEnded()
        let cpu = Double(clock() - cpuStart) / Double(CLOCKS_PER_SEC)
        let wall = Date().timeIntervalSince(wallStart)
        print(
            "\(attempts) attempts: wall \(String(format: "%.3f", wall)) s, CPU \(String(format: "%.3f", cpu)) s, "
                + "\(String(format: "%.2f", cpu / Double(attempts) * 1e6)) us of CPU each")
    }
}
