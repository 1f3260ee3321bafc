import CSystemd
import Glibc
import UploadCore
import UploadWire

/// Structured log entries for journald (sd_journal_send), so that
/// `journalctl --user -u uploadd UPLOAD_JOB_ID=7` tells one job's story.
package enum JournaldFields {
    /// Sends one entry with MESSAGE, PRIORITY and the job's fields. Secrets never get here: the
    /// destination is redacted and the message is the caller's. Control characters in the
    /// message and the destination are escaped, as on stderr: `journalctl` prints them raw.
    package static func send(message: String, level: LogLevel, job: JobLogContext) {
        let fields = [
            "MESSAGE=\(TerminalText.escaped(message, lineBreak: " "))", "PRIORITY=\(level.rawValue)",
            "SYSLOG_IDENTIFIER=uploadd", "UPLOAD_JOB_ID=\(job.id)", "UPLOAD_PROTOCOL=\(job.uploadProtocol)",
            "UPLOAD_DESTINATION=\(TerminalText.escaped(Redaction.redactURL(job.destination)))",
            "UPLOAD_STATE=\(job.state)",
        ]
        var pointers = fields.map { strdup($0) }
        defer { for pointer in pointers { free(pointer) } }
        pointers.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                _ = CSystemd_journal_send_fields($0, Int32(buffer.count))
            }
        }
    }
}
