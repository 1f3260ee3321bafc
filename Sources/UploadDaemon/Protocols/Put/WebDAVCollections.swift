import Foundation
import Synchronization
import UploadCore
import UploadHTTP
import UploadWire

/// Makes the folders (collections) a WebDAV PUT needs, the way RFC 4918 servers want it.
///
/// Apache mod_dav, Nextcloud, ownCloud, lighttpd and wsgidav answer 409 Conflict to a PUT whose
/// folder does not exist; Go's x/net/webdav (rclone) and SabreDAV 404, nginx's dav module 500, some
/// 424 Failed Dependency. A 404 or 500 means other things too, so after one of those the server is
/// asked first whether the folder exists (PROPFIND, Depth 0; when it does not do PROPFIND, whether
/// OPTIONS names it a WebDAV server). MKCOL makes one folder at a time (409 again while its parent
/// is missing, 405 when it exists already), so the missing folders are found by walking up until
/// one exists and made on the way down, with the upload's own credentials and headers. Folders
/// made or seen are remembered for the daemon's run, so a folder of a thousand files costs one walk.
///
/// Jobs into one new folder run side by side: each PUT is refused, and the first job's MKCOL may
/// land before another job's PROPFIND. That job then finds the folder there, and its PUT goes once
/// more (`ParentState.madeMeanwhile`).
struct WebDAVCollections: Sendable {
    let http: any HTTPSending

    /// Folders known to exist on their servers (full URLs ending in `/`), each with the moment
    /// (`Known.moment`) it became known, and the folders a MKCOL is making, with the moment it
    /// was sent: the server may have made one before its answer comes, and a PROPFIND of another
    /// job may see it there in between.
    struct Known {
        var folders: [String: UInt64] = [:]
        var beingMade: [String: UInt64] = [:]
        var moment: UInt64 = 0

        mutating func tick() -> UInt64 {
            moment += 1
            return moment
        }

        /// When this job last learnt of `folder`: known, or being made.
        func stamp(of folder: String) -> UInt64 { max(folders[folder] ?? 0, beingMade[folder] ?? 0) }

        /// A MKCOL of `folder` answered: known when it exists now, and no longer being made by
        /// the MKCOL sent at `sent` (another one sent since keeps its own stamp).
        mutating func answered(_ folder: String, sent: UInt64, exists: Bool) {
            if exists { folders[folder] = tick() }
            if beingMade[folder] == sent { beingMade[folder] = nil }
        }

        /// Forgets the folders found missing by a PROPFIND sent at `asked`; those known or being
        /// made since (by another job) stay.
        mutating func forget(_ missing: [String], askedAt asked: UInt64) {
            for folder in missing where stamp(of: folder) <= asked {
                folders[folder] = nil
            }
        }
    }
    private static let known = Mutex(Known())

    private static func isKnown(_ folder: String) -> Bool { known.withLock { $0.folders[folder] != nil } }

    /// Now, as the folders remembered count time: taken before a PUT, so that a folder made by
    /// another job after it can be told from one that was there all along.
    static func moment() -> UInt64 { known.withLock { $0.moment } }

    /// What a PUT refused the way a missing folder is refused learns about its folder.
    enum ParentState: Equatable {
        /// The folder is missing: make it, then send the file again.
        case missing
        /// The folder is there now and was not before: another job made it. Send the file again.
        case madeMeanwhile
        /// The folder is there, or the server is no WebDAV server: the refusal stands.
        case present
    }

    /// The folder of `url` and its parents, nearest first, up to (not including) the server's root.
    static func ancestors(of url: String) -> [String] {
        guard var components = URLComponents(string: url) else { return [] }
        components.query = nil
        components.fragment = nil
        var path = components.percentEncodedPath
        var result: [String] = []
        while let slash = path.dropLast(path.hasSuffix("/") ? 1 : 0).lastIndex(of: "/"), slash != path.startIndex {
            path = String(path[...slash])
            components.percentEncodedPath = path
            if let folder = components.string { result.append(folder) }
        }
        return result
    }

    /// The statuses servers give a PUT into a folder that does not exist.
    static func mayMeanMissingFolder(_ status: Int) -> Bool { [404, 409, 424, 500].contains(status) }

    /// Whether the folder `url` goes in is missing, after a PUT to it, sent at `sentAt`
    /// (`moment()`), got `putStatus`: the server says so to PROPFIND; or it does not do PROPFIND
    /// and the PUT got 409 (RFC 4918's answer) or OPTIONS names it a WebDAV server (a `DAV` header).
    /// A folder PROPFIND finds is `madeMeanwhile` when the PUT got 409 (which says the folder was
    /// missing when the PUT came) or when another job made it after `sentAt`. A 404 or 500 from a
    /// server that shows the folder was there all along stands as it is: a 500 stays retryable.
    func parentState(of url: String, target: ResolvedTarget, putStatus: Int, sentAt: UInt64) async throws
        -> ParentState
    {
        guard let parent = Self.ancestors(of: url).first else { return .present }
        var propfind = target.request("PROPFIND", url: parent, headers: [KeyValue(name: "Depth", value: "0")])
        propfind.headersOnly = true
        let asked = Self.moment()
        let found = try await http.send(propfind)
        switch found.status {
        case 200..<300:
            // Known or being made since the PUT was sent: another job's MKCOL made it.
            let madeSince = Self.known.withLock { $0.stamp(of: parent) > sentAt }
            return putStatus == 409 || madeSince ? .madeMeanwhile : .present
        case 404, 409, 410:
            // Not there (any more): what was remembered of it and of the folders above is stale.
            let folders = Self.ancestors(of: url)
            Self.known.withLock { $0.forget(folders, askedAt: asked) }
            return .missing
        default:
            if putStatus == 409 { return .missing }
            var options = target.request("OPTIONS", url: parent)
            options.headersOnly = true
            let answer = try await http.send(options)
            return HTTPStatus.isSuccess(answer.status) && answer.header("dav") != nil ? .missing : .present
        }
    }

    /// Makes the missing folders above `url`; false when every one existed already (another job
    /// into the same new folder made them meanwhile). Throws a failure that says which folder could not be made and why.
    func createParents(of url: String, target: ResolvedTarget) async throws -> Bool {
        let folders = Self.ancestors(of: url)
        guard !folders.isEmpty else { return false }
        // Up: MKCOL each folder until one exists (or is made).
        var missing: [String] = []
        var made = false
        for folder in folders {
            if Self.isKnown(folder) { break }
            switch try await makeCollection(folder, target: target) {
            case .made:
                made = true
            case .exists:
                break
            case .parentMissing:
                missing.append(folder)
                continue
            }
            break
        }
        // Down: the folders whose parents now exist.
        for folder in missing.reversed() {
            switch try await makeCollection(folder, target: target) {
            case .made:
                made = true
            case .exists:
                break
            case .parentMissing:
                throw Self.failure(folder, status: 409, detail: "its parent is still missing after it was made")
            }
        }
        return made
    }

    private enum Outcome { case made, exists, parentMissing }

    /// Sends MKCOL for `folder`, stamped as being made until its answer; a folder made, or found
    /// there, is then known.
    private func makeCollection(_ folder: String, target: ResolvedTarget) async throws -> Outcome {
        let sent = Self.known.withLock { known in
            let now = known.tick()
            known.beingMade[folder] = now
            return now
        }
        var outcome: Outcome?
        defer {
            Self.known.withLock { $0.answered(folder, sent: sent, exists: outcome == .made || outcome == .exists) }
        }
        outcome = try await sendMakeCollection(folder, target: target)
        return outcome!
    }

    private func sendMakeCollection(_ folder: String, target: ResolvedTarget) async throws -> Outcome {
        let response = try await http.send(target.request("MKCOL", url: folder))
        switch response.status {
        case 200..<300: return .made
        // 405 Method Not Allowed: there is something at that URL already; a folder, or the PUT
        // that follows says otherwise.
        case 405: return .exists
        case 409: return .parentMissing
        case 401:
            throw TransferFailure.http(
                status: 401, method: "MKCOL", url: Redaction.redactURL(folder), body: response.bodyText, retryAfter: nil
            )
        case 408, 423, 429, 500...:
            throw TransferFailure.http(
                status: response.status, method: "MKCOL", url: Redaction.redactURL(folder), body: response.bodyText,
                retryAfter: response.retryAfter)
        default:
            throw Self.failure(
                folder, status: response.status,
                detail: TransferFailure.summarize(response.bodyText, reasonPhrase: response.reason))
        }
    }

    private static func failure(_ folder: String, status: Int, detail: String) -> TransferFailure {
        let reason = "\(status) \(HTTPStatus.reason(status))" + (detail.isEmpty ? "" : ": \(detail)")
        return TransferFailure(
            JobError(
                code: "http",
                message:
                    "the folder \(Redaction.redactURL(folder)) does not exist on the server and could not be created (MKCOL answered \(reason)); create it there, or upload to a folder that exists",
                status: status),
            retryable: false)
    }
}
