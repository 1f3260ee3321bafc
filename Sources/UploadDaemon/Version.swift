/// The daemon's version, shown by `--version`, `daemon.hello` and the User-Agent.
enum UploaddVersion {
    static let string = "0.3.0"
}
