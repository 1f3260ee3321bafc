import UploadCore
import UploadWire

/// What a log line about a job carries besides its message.
struct JobLogContext: Sendable {
    var id: JobID
    var uploadProtocol: String
    var destination: String
    var state: String

    init(_ job: Job) {
        id = job.id
        uploadProtocol = job.effectiveProtocol.rawValue
        destination = job.spec.destination
        state = job.state.rawValue
    }
}
