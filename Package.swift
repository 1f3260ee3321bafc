// swift-tools-version:6.0
import PackageDescription

// Warnings are errors where the test command asks (UPLOADD_WARNINGS_AS_ERRORS=1), for the code
// of uploadd itself: the tests' macros (Swift Testing's) warn on their own. Only by request, as
// unsafe flags keep other packages from depending on UploadClient.
let strict: [SwiftSetting] =
    Context.environment["UPLOADD_WARNINGS_AS_ERRORS"] == "1" ? [.unsafeFlags(["-warnings-as-errors"])] : []

let package = Package(
    name: "uploadd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "uploadd", targets: ["uploadd"]),
        .executable(name: "uploadctl", targets: ["uploadctl"]),
        .executable(name: "uploadd-image", targets: ["uploadd-image"]),
        // For Swift programs that hand their files to uploadd: a typed async client of the socket.
        .library(name: "UploadClient", targets: ["UploadClient"]),
    ],
    targets: [
        // C libraries from Debian's -dev packages.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        .systemLibrary(name: "CSeccomp", pkgConfig: "libseccomp", providers: [.apt(["libseccomp-dev"])]),
        .systemLibrary(name: "CNcurses", pkgConfig: "ncursesw", providers: [.apt(["libncurses-dev"])]),
        // Small C helpers: CRC32C, accept4, SO_PEERCRED, FICLONE.
        .target(name: "CShims"),

        // What clients need to talk to the daemon: the JSON-RPC types, job info, errors, the socket's
        // place. uploadctl links only this; it is the base of the Swift client library.
        .target(name: "UploadWire", swiftSettings: strict),
        // The daemon's model: jobs, their life cycle, the journal's format, retry policy.
        .target(name: "UploadCore", dependencies: ["UploadWire", "CShims"], swiftSettings: strict),
        // What the daemon asks of Linux: files and folders with care, helper processes, threads,
        // clocks, signals, crash markers, the log and journald. It knows nothing of HTTP or the queue.
        .target(
            name: "UploadPlatform", dependencies: ["UploadCore", "UploadWire", "CShims", "CSystemd"],
            swiftSettings: strict),
        // HTTP over libcurl: the multi loop on its thread, requests and bodies, progress, bandwidth
        // buckets, RFC 9110's rules, digests. It knows nothing of jobs, protocols or the queue.
        .target(
            name: "UploadHTTP",
            dependencies: ["UploadPlatform", "UploadCore", "UploadWire", "CShims", "CCurl", "COpenSSL"],
            swiftSettings: strict),
        .target(
            name: "UploadDaemon",
            dependencies: ["UploadHTTP", "UploadPlatform", "UploadCore", "UploadWire", "CShims", "CSystemd"],
            swiftSettings: strict
        ),
        .target(name: "UploadClient", dependencies: ["UploadWire", "CShims"], swiftSettings: strict),
        .target(
            name: "UploadControl", dependencies: ["UploadClient", "UploadWire", "CShims", "CNcurses"],
            swiftSettings: strict),
        .executableTarget(name: "uploadd", dependencies: ["UploadDaemon"], swiftSettings: strict),
        .executableTarget(name: "uploadctl", dependencies: ["UploadControl"], swiftSettings: strict),
        // The client library's example, built with everything so that it cannot rot.
        .executableTarget(
            name: "uploadd-example-queue-folder", dependencies: ["UploadClient", "UploadWire"],
            path: "contrib/examples/QueueFolder"),
        // The image helper uploadd starts for each image it prepares: libvips, out of the daemon's
        // process (libvips's API is variadic, so the work is in C).
        .target(name: "CImagePrep", dependencies: ["CVips", "CSeccomp"]),
        .executableTarget(name: "uploadd-image", dependencies: ["CImagePrep"], swiftSettings: strict),

        // What several test targets share (a seeded random generator, checkpoint builders).
        .target(name: "TestSupport", dependencies: ["UploadCore", "UploadWire"], path: "Tests/TestSupport"),
        .testTarget(name: "UploadWireTests", dependencies: ["UploadWire", "TestSupport"]),
        .testTarget(name: "UploadCoreTests", dependencies: ["UploadCore", "UploadWire", "TestSupport"]),
        .testTarget(
            name: "UploadDaemonTests",
            dependencies: ["UploadDaemon", "UploadHTTP", "UploadPlatform", "UploadCore", "UploadWire", "TestSupport"]),
        .testTarget(
            name: "UploadControlTests", dependencies: ["UploadControl", "UploadClient", "UploadWire", "TestSupport"]),
        .testTarget(
            name: "IntegrationTests", dependencies: ["UploadCore", "UploadWire", "UploadClient", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
