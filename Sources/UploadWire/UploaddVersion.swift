/// uploadd's version, shown by `uploadd --version`, `uploadctl --version`, `daemon.hello` and the
/// User-Agent: one place, so that the daemon and its client never disagree about their release.
public enum UploaddVersion {
    public static let string = "0.3.0"
}
