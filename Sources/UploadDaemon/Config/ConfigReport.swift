import Synchronization

/// What status says about the config: the warnings of the config in use, and the errors of the
/// last reload that failed (whose file was not applied). Replaced on reload, read by status.
final class ConfigReport: Sendable {
    private struct State {
        var warnings: [String]
        var errors: [String] = []
    }

    private let state: Mutex<State>

    init(warnings: [String]) { state = Mutex(State(warnings: warnings)) }

    var warnings: [String] { state.withLock { $0.warnings } }
    var errors: [String] { state.withLock { $0.errors } }

    /// A new config is in use: its warnings, and no errors.
    func applied(warnings: [String]) { state.withLock { $0 = State(warnings: warnings) } }

    /// The file could not be applied: the config in use (and its warnings) stay.
    func refused(errors: [String]) { state.withLock { $0.errors = errors } }
}
