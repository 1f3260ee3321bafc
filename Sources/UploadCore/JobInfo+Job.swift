import Foundation
import UploadWire

extension JobInfo {
    /// The public view of a job, with the live numbers of a running attempt.
    public init(
        job: Job, bytesSent: Int64 = 0, speed: Double = 0, speedSettled: Bool = true, includeHistory: Bool = false,
        waiting: String? = nil
    ) {
        // A finished upload sent all of it; a running one, what reached the wire (multipart
        // framing can add a little: never more than the file).
        let sent = job.state == .completed ? job.bytesTotal : min(max(bytesSent, 0), job.bytesTotal)
        // What is left is what has not reached the server yet, acknowledged or not: a PUT
        // acknowledges nothing until its end, and its ETA must still fall to 0.
        let remaining = Double(max(job.bytesTotal - max(job.bytesAcked, sent), 0))
        // No ETA from a speed measured too briefly to mean anything (`speedSettled`).
        let eta = speed > 0 && speedSettled && job.state == .running ? (remaining / speed).rounded() : nil
        self.init(
            id: job.id, state: job.state, source: job.spec.source,
            destination: Redaction.redactURL(job.spec.destination), protocol: job.effectiveProtocol,
            bytesTotal: job.bytesTotal, bytesSent: sent, bytesAcked: job.bytesAcked, speed: speed, eta: eta,
            attempts: job.attempts, priority: job.spec.priority, error: job.error, result: job.result,
            createdAt: job.createdAt, updatedAt: job.updatedAt, nextAttemptAt: job.nextAttemptAt,
            snapshot: job.snapshotKind?.rawValue, user: job.spec.userName,
            history: includeHistory ? job.history : nil, waiting: waiting,
            image: job.spec.preparation.first { $0.step == "image" }?.options,
            prepared: job.prepared.map { prepared in
                PreparedInfo(
                    size: prepared.size, originalSize: job.snapshot?.size ?? prepared.size, sha256: prepared.sha256,
                    fileName: prepared.fileName, contentType: prepared.contentType,
                    details: Dictionary(prepared.details.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 }))
            }, batch: job.spec.batch, revision: job.revision, clientToken: job.spec.clientToken,
            metadata: job.spec.metadata, folder: job.spec.folder)
    }
}
