import Dispatch
import Synchronization
import Glibc

/// Signals as an async sequence, through DispatchSource (signalfd on Linux): no Swift code runs in
/// a signal handler.
final class SignalStream: Sendable {
    let stream: AsyncStream<Int32>
    private let sources: [SignalSourceBox]

    init(_ signals: [Int32]) {
        var continuation: AsyncStream<Int32>.Continuation!
        stream = AsyncStream { continuation = $0 }
        let yield = continuation!
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { yield.yield(number) }
            source.activate()
            return SignalSourceBox(source)
        }
    }
}

private final class SignalSourceBox: @unchecked Sendable {
    // Invariant: the source is configured once in init and only kept alive here.
    let source: DispatchSourceSignal
    init(_ source: DispatchSourceSignal) { self.source = source }
}

/// Config warnings, replaced on reload and read by status.
final class ConfigWarnings: Sendable {
    private let storage: Mutex<[String]>
    init(_ warnings: [String]) { storage = Mutex(warnings) }
    var current: [String] { storage.withLock { $0 } }
    func replace(_ warnings: [String]) { storage.withLock { $0 = warnings } }
}
