import UploadCore
import UploadWire

/// One way of preparing a job's source before it is sent (image shrinking is the first). A step
/// reads the input it is given and writes its whole result to `output`; one that decodes what a
/// stranger made does it in a `HelperProcess`, so that a decoder that crashes fails the job, not
/// the daemon.
protocol PreparationStep: Sendable {
    /// The name in `PreparationRequest.step` and in the journal; never changes once released.
    var name: String { get }

    /// Checks the options when the job is added: bad options fail `add` with this message, not the
    /// job later.
    func validate(options: String) throws(PreparationFailure)

    /// Writes the prepared bytes to `output` (an empty file of the cache) from `input`.
    func prepare(_ input: PreparationInput, into output: Int32, options: String) async throws -> PreparationOutcome
}

/// What a step reads: an open file it must not close, its size, and the name it will have on the server.
struct PreparationInput: Sendable {
    var fd: Int32
    var size: Int64
    var fileName: String
    /// Where its helper's run gets a private temporary folder (`HelperProcess.temporaryRoot`).
    var temporaryRoot: String
}

/// What a step says about what it made, journaled with the prepared file.
struct PreparationOutcome: Sendable, Equatable {
    /// The new name on the server when the step changed the format (`IMG_1.HEIC` → `IMG_1.jpg`).
    var fileName: String?
    var contentType: String?
    /// For `show`: `width`, `height`, …
    var details: [KeyValue] = []
    /// The step left the bytes as they were (not an image): the input is sent as it is.
    var unchanged = false
}

/// Why a step could not prepare a source: the job fails with this message.
struct PreparationFailure: Error, Equatable, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// The daemon's preparation steps, by name: one line per step.
enum PreparationRegistry {
    static let steps: [String: any PreparationStep] = ["image": ImageStep()]
}
