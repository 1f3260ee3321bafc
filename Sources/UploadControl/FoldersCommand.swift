import Foundation
import UploadWire

/// `uploadctl folders [pause NAME | resume NAME]`: the watched folders of uploadd.conf, and what
/// each took; or a pause or resume of one.
struct FoldersCommand: ControlCommand {
    static let name = "folders"
    static let abstract = "List the watched folders ([folder NAME] in uploadd.conf), or pause or resume one"
    static let synopsis = "[pause NAME | resume NAME]"
    static let details = """
        Each folder's state: watching; paused; waiting (its folder is missing: watched once it is
        there); failing (refused, or out of inotify watches: the line below says what to do);
        starting (not scanned yet). Then the files it took: queued (waiting or uploading),
        uploaded and failed (not taken again until they change), and its last upload.

        pause NAME    take nothing more from the folder, and pause its unfinished jobs
        resume NAME   resume the jobs the pause paused, and take what came meanwhile

        A pause holds across restarts until resumed. With --json, prints {"folders": [...]}, or
        the folder paused or resumed.
        """
    static let options: [OptionSpec] = []

    enum Action: Equatable {
        case list
        case pause(String)
        case resume(String)
    }

    var action: Action

    init(parsed: ParsedArguments) throws(UsageError) {
        switch parsed.positionals.first {
        case nil, "list"?:
            guard parsed.positionals.count <= 1 else { throw UsageError("folders list takes no arguments") }
            action = .list
        case let verb? where verb == "pause" || verb == "resume":
            guard parsed.positionals.count == 2, let name = parsed.positionals.last, !name.isEmpty else {
                throw UsageError("folders \(verb) takes one folder's NAME, as in [folder NAME]")
            }
            action = verb == "pause" ? .pause(name) : .resume(name)
        case let other?:
            throw UsageError("unknown folders action '\(other)': pause NAME, resume NAME, or none to list")
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let connection = try context.connect()
        switch action {
        case .pause(let name), .resume(let name):
            let method: ControlMethod = action == .pause(name) ? .pauseFolder : .resumeFolder
            let folder = try connection.call(method, params: FolderParams(name: name), as: FolderInfo.self)
            if context.json {
                try context.printJSON(folder)
            } else {
                context.print(lines: Self.describe(folder, pausedOrResumed: method == .pauseFolder))
            }
            return .success
        case .list:
            let list = try connection.call(.folders, params: NoParams(), as: FolderList.self)
            if context.json {
                try context.printJSON(list)
            } else if list.folders.isEmpty {
                context.printError(
                    "no watched folders: add a [folder NAME] section to uploadd.conf (see uploadd.conf(5))")
            } else {
                context.print(lines: Self.table(list.folders, now: Date()))
            }
            return .success
        }
    }

    static func describe(_ folder: FolderInfo, pausedOrResumed paused: Bool) -> [String] {
        let jobs = folder.queued == 1 ? "its unfinished job" : "its \(folder.queued) unfinished jobs"
        let first =
            paused
            ? "\(folder.name): paused" + (folder.queued > 0 ? ", with \(jobs)" : "")
            : "\(folder.name): resumed (\(folder.stateName))"
        return [first] + (folder.reason.map { ["  \($0)"] } ?? [])
    }

    /// One line a folder, with the reason of one not watched below it.
    static func table(_ folders: [FolderInfo], now: Date) -> [String] {
        let header = ["NAME", "STATE", "TAKEN", "QUEUED", "UPLOADED", "FAILED", "LAST UPLOAD"]
        let rows = folders.map { folder in
            [
                folder.name, folder.stateName, "\(folder.taken)", "\(folder.queued)", "\(folder.uploaded)",
                "\(folder.failed)", folder.lastUpload.map { lastUpload($0, now: now) } ?? "-",
            ]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ row: [String]) -> String {
            var text = ""
            for (column, cell) in row.enumerated() {
                if column > 0 { text += "  " }
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                // Counts line up on the right, words on the left.
                text += (2...5).contains(column) ? pad + cell : cell + (column == row.count - 1 ? "" : pad)
            }
            return text
        }
        var lines = [line(header)]
        for (folder, row) in zip(folders, rows) {
            lines.append(line(row))
            if let reason = folder.reason { lines.append("  \(folder.name): \(reason)") }
        }
        return lines
    }

    /// `3m ago: IMG_0042.jpg`.
    static func lastUpload(_ upload: FolderInfo.LastUpload, now: Date) -> String {
        let seconds = max(0, Int(now.timeIntervalSince(upload.at)))
        let age =
            seconds < 60
            ? "\(seconds)s"
            : seconds < 3600 ? "\(seconds / 60)m" : seconds < 86400 ? "\(seconds / 3600)h" : "\(seconds / 86400)d"
        let name = upload.source.split(separator: "/").last.map(String.init) ?? upload.source
        return "\(age) ago: \(name)"
    }
}
