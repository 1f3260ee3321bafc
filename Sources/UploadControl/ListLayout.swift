import UploadWire

/// `list`'s table fitted to a terminal's width. What identifies a job always stays: its ID, its
/// state, its file's name, the arrow and the destination's host. Columns give way in this order:
/// the protocol goes, then the speed (`top` has it) while progress becomes a percentage, then the
/// middles of the paths are cut.
enum ListLayout {
    static let arrow = " -> "

    /// Lines of at most `width` columns (unless the ID, state and names alone are wider).
    static func lines(_ jobs: [JobInfo], width: Int) -> [String] {
        for compact in [false, true] {
            for withProtocol in [true, false] where !(compact && withProtocol) {
                let rows =
                    [header(withProtocol, compact: compact)]
                    + jobs.map { cells($0, withProtocol: withProtocol, compact: compact) }
                let room = width - fixedWidth(rows)
                let fits = jobs.allSatisfy { minimumRouteWidth($0) <= room }
                if fits || compact {
                    return fitted(rows, jobs: jobs, room: room)
                }
            }
        }
        return []
    }

    private static func header(_ withProtocol: Bool, compact: Bool) -> [String] {
        var header = JobFormatting.tableHeader
        if !withProtocol { header.remove(at: 4) }
        if compact { header.remove(at: 3) }
        return header
    }

    /// The cells before the route; `compact`: the progress as a percentage.
    private static func cells(_ job: JobInfo, withProtocol: Bool, compact: Bool) -> [String] {
        var row = JobFormatting.tableRow(job)
        // What it waits for gets a line of its own (`note`): in the column it took the room of
        // the names.
        row[1] = job.state.rawValue
        if compact {
            let done = JobFormatting.bytesDone(acked: job.bytesAcked, sent: job.bytesSent)
            row[2] = JobFormatting.percent(done: done, total: job.bytesTotal) ?? ByteSize.format(done)
        }
        if !withProtocol { row.remove(at: 4) }
        if compact { row.remove(at: 3) }
        return row
    }

    /// The columns all but the last take, with the two spaces after each.
    private static func fixedWidth(_ rows: [[String]]) -> Int {
        let columns = rows[0].count - 1
        return (0..<columns).reduce(0) { sum, column in
            sum + rows.map { TerminalText.width($0[column]) }.max()! + 2
        }
    }

    private static func fitted(_ rows: [[String]], jobs: [JobInfo], room: Int) -> [String] {
        var rows = rows
        let last = rows[0].count - 1
        rows[0][last] = TerminalText.middleTruncated(rows[0][last], to: max(room, 6))
        for (index, job) in jobs.enumerated() {
            rows[index + 1][last] = route(job, width: room)
        }
        let lines = JobFormatting.table(rows)
        var result = [lines[0]]
        for (index, job) in jobs.enumerated() {
            result.append(lines[index + 1])
            if let note = note(job, width: room + fixedWidth(rows)) { result.append(note) }
        }
        return result
    }

    /// `    retrying in 43s: HTTP 500`, under its job's row: why a job waits, or its error.
    static func note(_ job: JobInfo, width: Int) -> String? {
        let text: String
        if let activity = job.activity {
            text = activity
        } else if let waiting = JobFormatting.waitingText(job) {
            text = waiting
        } else if job.state == .failed, let error = job.error {
            text = error.message
        } else {
            return nil
        }
        return TerminalText.middleTruncated("    " + TerminalText.escaped(text), to: width)
    }

    static func target(_ job: JobInfo) -> String {
        TerminalText.escaped(job.state == .completed ? job.result?.url ?? job.destination : job.destination)
    }

    /// The file's name, the arrow and the destination's scheme and host: what must show.
    static func minimumRouteWidth(_ job: JobInfo) -> Int {
        let source = TerminalText.escaped(job.source)
        let destination = target(job)
        return min(TerminalText.width(source), TerminalText.width(name(of: source)) + 2) + arrow.count
            + min(TerminalText.width(destination), TerminalText.width(host(of: destination)) + 2)
    }

    /// `source -> destination` in `width` columns: the middle of the source's folder and of the
    /// destination's path give way, the file's name and the host stay whole while they can.
    static func route(_ job: JobInfo, width: Int) -> String {
        let source = TerminalText.escaped(job.source)
        let destination = target(job)
        let whole = source + arrow + destination
        guard TerminalText.width(whole) > width else { return whole }
        let sourceMinimum = min(TerminalText.width(source), TerminalText.width(name(of: source)) + 2)
        let destinationMinimum = min(
            TerminalText.width(destination), TerminalText.width(host(of: destination)) + 2)
        let spare = width - arrow.count - sourceMinimum - destinationMinimum
        guard spare >= 0 else { return TerminalText.middleTruncated(whole, to: width) }
        // What is left over goes to the destination's path first (where the file lands), then
        // to the source's folder.
        let destinationWidth = min(TerminalText.width(destination), destinationMinimum + spare)
        let sourceWidth = width - arrow.count - destinationWidth
        return keepingName(source, width: sourceWidth) + arrow + keepingOrigin(destination, width: destinationWidth)
    }

    /// The last part of a path: a file's name.
    static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), path.index(after: slash) < path.endIndex else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// `scheme://host:port`, or the first part of what has no scheme.
    static func origin(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return "" }
        let rest = url[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return url }
        return String(url[..<slash])
    }

    /// `host:port` of a URL: its origin without the scheme, what is left when room is short.
    static func host(of url: String) -> String {
        let origin = origin(of: url)
        guard let scheme = origin.range(of: "://") else { return origin }
        return String(origin[scheme.upperBound...])
    }

    /// `path` in `width` columns, its folder's middle cut: `/home/u/…/photos/IMG_0001.jpg`.
    private static func keepingName(_ path: String, width: Int) -> String {
        guard TerminalText.width(path) > width else { return path }
        let name = name(of: path)
        let folder = String(path.dropLast(name.count))
        let folderRoom = width - TerminalText.width(name)
        guard folderRoom >= 1 else { return TerminalText.middleTruncated(path, to: width) }
        return TerminalText.middleTruncated(folder, to: folderRoom) + name
    }

    /// `url` in `width` columns, its path's middle cut: `http://127.0.0.1:8080/…/w/`, or
    /// `127.0.0.1:8080/…/w/` when even that is too wide.
    private static func keepingOrigin(_ url: String, width: Int) -> String {
        guard TerminalText.width(url) > width else { return url }
        var origin = origin(of: url)
        if TerminalText.width(origin) + 2 > width { origin = host(of: url) }
        let path = String(url[(url.range(of: origin)?.upperBound ?? url.startIndex)...])
        let pathRoom = width - TerminalText.width(origin)
        guard pathRoom >= 1 else { return TerminalText.middleTruncated(url, to: width) }
        return origin + TerminalText.middleTruncated(path, to: pathRoom)
    }
}
