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
struct WebDAVCollections: Sendable {
    let http: any HTTPSending

    /// Folders known to exist on their servers (full URLs ending in `/`).
    private static let known = Mutex(Set<String>())

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

    /// Whether the folder `url` goes in is missing, after a PUT to it got `putStatus`: the server
    /// says so to PROPFIND; or it does not do PROPFIND and the PUT got 409 (RFC 4918's answer) or
    /// OPTIONS names it a WebDAV server (a `DAV` header). A 404 or 500 from a server that shows the
    /// folder exists stands as it is: a 500 stays a retryable error.
    func parentIsMissing(of url: String, target: ResolvedTarget, putStatus: Int) async throws -> Bool {
        guard let parent = Self.ancestors(of: url).first else { return false }
        var propfind = target.request("PROPFIND", url: parent, headers: [KeyValue(name: "Depth", value: "0")])
        propfind.headersOnly = true
        let found = try await http.send(propfind)
        switch found.status {
        case 200..<300: return false
        case 404, 409, 410:
            // Not there (any more): what was remembered of it and of the folders above is stale.
            let folders = Set(Self.ancestors(of: url))
            Self.known.withLock { $0.subtract(folders) }
            return true
        default:
            if putStatus == 409 { return true }
            var options = target.request("OPTIONS", url: parent)
            options.headersOnly = true
            let answer = try await http.send(options)
            return HTTPStatus.isSuccess(answer.status) && answer.header("dav") != nil
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
            if Self.known.withLock({ $0.contains(folder) }) { break }
            switch try await makeCollection(folder, target: target) {
            case .made:
                made = true
                Self.known.withLock { _ = $0.insert(folder) }
            case .exists:
                Self.known.withLock { _ = $0.insert(folder) }
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
                Self.known.withLock { _ = $0.insert(folder) }
            case .exists:
                Self.known.withLock { _ = $0.insert(folder) }
            case .parentMissing:
                throw Self.failure(folder, status: 409, detail: "its parent is still missing after it was made")
            }
        }
        return made
    }

    private enum Outcome { case made, exists, parentMissing }

    private func makeCollection(_ folder: String, target: ResolvedTarget) async throws -> Outcome {
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
