extension DaemonStatus {
    /// As the synthesized encoding, but `bandwidth_limit` is always there, null for none: a
    /// script reading `uploadctl --json status` finds the limit (or that there is none) without
    /// knowing that a missing key means no limit.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(pid, forKey: .pid)
        try container.encode(uptime, forKey: .uptime)
        try container.encode(jobs, forKey: .jobs)
        try container.encode(speed, forKey: .speed)
        try container.encode(maxTransfers, forKey: .maxTransfers)
        try container.encode(stateDirectory, forKey: .stateDirectory)
        try container.encode(cacheDirectory, forKey: .cacheDirectory)
        try container.encode(socket, forKey: .socket)
        try container.encode(journalBytes, forKey: .journalBytes)
        try container.encodeIfPresent(journalDamage, forKey: .journalDamage)
        try container.encode(configWarnings, forKey: .configWarnings)
        try container.encodeIfPresent(configErrors, forKey: .configErrors)
        try container.encode(bandwidthLimit, forKey: .bandwidthLimit)
        try container.encodeIfPresent(conditions, forKey: .conditions)
        try container.encodeIfPresent(folderProblems, forKey: .folderProblems)
    }
}
