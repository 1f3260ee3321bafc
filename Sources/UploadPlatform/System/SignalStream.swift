import Dispatch
import Glibc
import Synchronization

/// Signals as an async sequence, through DispatchSource (signalfd on Linux): no Swift code runs in
/// a signal handler.
package final class SignalStream: Sendable {
    package let stream: AsyncStream<Int32>
    private let sources: [SignalSourceBox]

    package init(_ signals: [Int32]) {
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
