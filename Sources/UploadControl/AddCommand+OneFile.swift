import Glibc
import UploadWire

extension AddCommand {
    /// Why this add may take one file only, or nil: a `--client-token` names one job, and several
    /// files sent to one file name would overwrite each other, each "completed", only the last
    /// one's content left.
    var onlyOneFile: String? {
        if clientToken != nil { return "--client-token names one job: add a single file with it" }
        guard let name = fileNamed(by: destination) else { return nil }
        return "--to \(destination) names one file (\(name)): several files sent there would overwrite each "
            + "other; end it with / (as in --to \(destination)/) to upload them into that folder"
    }

    /// The file name `destination` gives when every file sent there lands on that one name, or
    /// nil: a folder (a trailing `/`, or a `file://` path that is a folder), a URL that takes
    /// files by another name (post's form, a tus endpoint), or a remote (its config decides).
    private func fileNamed(by destination: String) -> String? {
        guard let parsed = try? Destination.parse(destination), let name = parsed.explicitFileName else { return nil }
        switch parsed {
        case .file(let path):
            var info = stat()
            let isFolder = stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
            return isFolder ? nil : name
        case .s3: return name
        case .http: return uploadProtocol?.traits.namesTheFileByURL == true ? name : nil
        case .remote: return nil
        }
    }
}

extension AddCommand {
    /// Why an add found no file to queue, after "nothing to add: ": what really happened, with
    /// what to do about it.
    func nothingFound(pathsRead: Int, skipped: [FolderWalker.Skip]) -> String {
        if pathsRead == 0 { return "no paths came on standard input (add - reads one per line, -0 NUL-separated)" }
        let excluded = skipped.count { $0 == .excluded }
        let hidden = skipped.count { $0 == .hidden }
        let symlinks = skipped.count { $0 == .symlink }
        var reasons: [String] = []
        if excluded > 0 { reasons.append("--exclude left out \(Self.files(excluded))") }
        if hidden > 0 { reasons.append("\(Self.files(hidden)) hidden (add them with --hidden)") }
        if symlinks > 0 {
            reasons.append("\(Self.files(symlinks, "symlink")) not followed (follow them with --follow)")
        }
        guard !reasons.isEmpty else { return "the folders named hold no files" }
        return "every file found was passed over: " + reasons.joined(separator: "; ")
    }

    private static func files(_ count: Int, _ noun: String = "file") -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }
}
