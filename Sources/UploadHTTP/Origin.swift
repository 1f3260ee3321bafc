import Foundation

/// Scheme, host and port of a URL: what decides whether credentials may go there.
///
/// Credentials and the user's headers go only to the origin the user named, as curl's
/// `--location` does without `--location-trusted`; a server cannot send them elsewhere by naming
/// another host in a tus `Location` or in the JSON of its answer.
package struct Origin: Equatable, CustomStringConvertible {
    package var scheme: String
    package var host: String
    package var port: Int

    package init?(_ url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        self.scheme = scheme
        self.host = host
        self.port = components.port ?? defaultPort
    }

    package var description: String { "\(scheme)://\(host):\(port)" }
}
