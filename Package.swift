// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "uploadd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "uploadd", targets: ["uploadd"]),
        .executable(name: "uploadctl", targets: ["uploadctl"]),
    ],
    targets: [
        // C libraries from Debian's -dev packages.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Small C helpers: CRC32C, accept4, SO_PEERCRED, FICLONE.
        .target(name: "CShims"),

        .target(name: "UploadCore", dependencies: ["CShims"]),
        .target(
            name: "UploadDaemon",
            dependencies: ["UploadCore", "CShims", "CCurl", "CSystemd", "COpenSSL"]
        ),
        .target(name: "UploadControl", dependencies: ["UploadCore", "CShims"]),
        .executableTarget(name: "uploadd", dependencies: ["UploadDaemon"]),
        .executableTarget(name: "uploadctl", dependencies: ["UploadControl"]),

        .testTarget(name: "UploadCoreTests", dependencies: ["UploadCore"]),
        .testTarget(name: "UploadDaemonTests", dependencies: ["UploadDaemon", "UploadCore"]),
        .testTarget(name: "UploadControlTests", dependencies: ["UploadControl", "UploadCore"]),
        .testTarget(name: "IntegrationTests", dependencies: ["UploadCore"]),
    ],
    swiftLanguageModes: [.v6]
)
