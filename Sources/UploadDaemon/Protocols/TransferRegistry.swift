import Synchronization
import UploadCore
import UploadHTTP
import UploadWire

/// The daemon's protocols: how to make each one's Transfer, what the rest of the daemon asks of
/// each (`Entry`), and the probes `auto` asks an http server before it settles on put. A new
/// protocol is a folder next to this file (its Transfer, its CheckpointPayload), one row here,
/// and its name and traits in `UploadProtocol` (which uploadctl reads too): the rest of the code
/// asks these, not a protocol's name.
enum TransferRegistry {
    /// One protocol, as the scheduler, the target's resolution and `remotes --test` see it.
    struct Entry: Sendable {
        let make: @Sendable (any HTTPSending) -> any Transfer
        /// Whether it goes over the network: local copies never wait for it, for a metered
        /// connection or for battery power, and run off the HTTP thread.
        var usesNetwork = true
        /// Whether it reads the file only through request bodies, which pause for bytes a copy
        /// being made alongside has not reached yet; the others (checksums of whole chunks, a
        /// local copy) wait until the copy is saved.
        var readsWhileCopying = false
        /// How `remotes --test` asks a server of it whether the remote's credentials hold.
        var remoteTest = RemoteTest.options
    }

    enum RemoteTest: Sendable {
        /// OPTIONS, then PROPFIND or HEAD with the credentials where OPTIONS is open to all.
        case options
        /// A form without a file: credentials may be form fields, which only a form carries.
        case form
        /// HeadBucket, signed.
        case s3
        /// A temporary file made and removed in the folder.
        case localFolder
    }

    /// Each protocol's entry; nil for `auto`, which is settled before anything is sent. A switch,
    /// not a table by name: asked several times an attempt, where a lookup hashed the name.
    private static func registered(_ uploadProtocol: UploadProtocol) -> Entry? {
        switch uploadProtocol {
        case .put: Entry(make: { PutTransfer(http: $0) }, readsWhileCopying: true)
        case .post: Entry(make: { PostTransfer(http: $0) }, readsWhileCopying: true, remoteTest: .form)
        case .file: Entry(make: { _ in FileTransfer() }, usesNetwork: false, remoteTest: .localFolder)
        case .chunked: Entry(make: { ChunkedTransfer(http: $0) }, remoteTest: .form)
        case .tus: Entry(make: { TusTransfer(http: $0) })
        case .s3: Entry(make: { S3Transfer(http: $0) }, remoteTest: .s3)
        case .auto: nil
        }
    }

    /// What the daemon knows of `uploadProtocol` (`auto` before it is settled: an http protocol).
    static func entry(_ uploadProtocol: UploadProtocol) -> Entry {
        registered(uploadProtocol) ?? registered(fallback)!
    }

    /// For an http destination under `auto`: the protocols that can tell from the server's answer
    /// whether it speaks them, in the order they are asked. A probe says what the server answered
    /// and whether that means yes, from the status line and headers alone (`probeRequest`); one
    /// that cannot reach the server throws (the attempt is retried with the probe, nothing
    /// decided). One the server does not answer within `probeSeconds` decides nothing either:
    /// the upload falls back to `fallback`, and the job's history says so.
    typealias Probe = @Sendable (any HTTPSending, ResolvedTarget) async throws -> (speaks: Bool, answered: String)
    private static let probes: [(UploadProtocol, Probe)] = [
        (.tus, { http, target in try await TusServer.probe(http: http, target: target) })
    ]
    /// What `auto` uploads an http destination with when no probe says yes.
    static let fallback = UploadProtocol.put

    /// How long a probe may take to connect, and then to answer with its head.
    static let probeSeconds = 5

    /// A probe's request: bounded to `probeSeconds`, and ended at the first byte of the answer's
    /// body (a server that sends an endless body to OPTIONS cannot hold it).
    static func probeRequest(_ request: HTTPRequest) -> HTTPRequest {
        var bounded = request
        bounded.headersOnly = true
        bounded.connectTimeout = min(request.connectTimeout, probeSeconds)
        bounded.responseTimeout = probeSeconds
        bounded.stallTimeout = min(request.stallTimeout, probeSeconds)
        return bounded
    }

    /// The protocols this build can upload with, as daemon.hello lists them.
    static var supportedProtocols: [UploadProtocol] { UploadProtocol.allCases.filter { registered($0) != nil } }

    static func transfer(for uploadProtocol: UploadProtocol, http: any HTTPSending) throws(TransferFailure)
        -> any Transfer
    {
        guard let entry = registered(uploadProtocol) else {
            throw .config("no transfer uploads with protocol \(uploadProtocol.rawValue) (it was not resolved)")
        }
        return entry.make(http)
    }

    /// Asks the server which protocol to use: the first probe that recognizes it, else `fallback`;
    /// with what the server answered, for the job's history.
    /// With `remembering`, an answer is reused for the same URL for a while: a folder of 5,000
    /// files asks the server once, not 5,000 times.
    static func resolveAuto(http: any HTTPSending, target: ResolvedTarget, remembering: ProbeAnswers? = nil)
        async throws -> (UploadProtocol, String)
    {
        if let recent = remembering?.recent(for: target.url) {
            return (recent.chosen, recent.why + " (asked for an earlier file)")
        }
        var answers: [String] = []
        var chosen = fallback
        for (uploadProtocol, probe) in probes {
            let speaks: Bool
            let answered: String
            do {
                (speaks, answered) = try await probe(http, target)
            } catch let failure as TransferFailure where ["timeout", "stalled"].contains(failure.error.code) {
                // Connected, but no answer in time: a probe must not hold the upload for the day.
                answers.append(
                    "the server did not answer the \(uploadProtocol.rawValue) probe within \(probeSeconds) s (\(failure.error.message))"
                )
                break
            }
            answers.append(answered)
            if speaks {
                chosen = uploadProtocol
                break
            }
        }
        let why = "\(answers.joined(separator: "; ")): uploading with \(chosen.rawValue)"
        remembering?.remember(chosen, why: why, for: target.url)
        return (chosen, why)
    }
}

/// What `auto`'s probes found per URL, for five minutes (the scheduler keeps one).
final class ProbeAnswers: Sendable {
    static let lifetime: Duration = .seconds(300)
    private let answers = Mutex<[String: (chosen: UploadProtocol, why: String, at: ContinuousClock.Instant)]>([:])

    func recent(for url: String) -> (chosen: UploadProtocol, why: String)? {
        guard let answer = answers.withLock({ $0[url] }), ContinuousClock.now - answer.at < Self.lifetime else {
            return nil
        }
        return (answer.chosen, answer.why)
    }

    func remember(_ chosen: UploadProtocol, why: String, for url: String) {
        answers.withLock { answers in
            if answers.count >= 1000 { answers.removeAll() }  // a bound, not an LRU: answers are cheap to get again
            answers[url] = (chosen, why, .now)
        }
    }
}
