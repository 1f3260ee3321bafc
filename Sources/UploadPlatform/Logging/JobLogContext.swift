import UploadCore
import UploadWire

/// What a log line about a job carries besides its message.
package struct JobLogContext: Sendable {
    package var id: JobID
    package var uploadProtocol: String
    package var destination: String
    package var state: String

    package init(_ job: Job) {
        id = job.id
        uploadProtocol = job.effectiveProtocol.rawValue
        destination = job.spec.destination
        state = job.state.rawValue
    }
}
