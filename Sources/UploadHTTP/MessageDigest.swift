import COpenSSL
import UploadCore
import UploadWire

/// A streaming message digest from libcrypto (EVP), for checksums protocols ask for by name
/// (tus's Upload-Checksum: sha1, sha256, md5, ...).
package final class MessageDigest {
    private let context: OpaquePointer

    /// Nil when libcrypto does not know the algorithm.
    package init?(algorithm name: String) {
        guard let digest = EVP_get_digestbyname(name), let context = EVP_MD_CTX_new() else { return nil }
        guard EVP_DigestInit_ex(context, digest, nil) == 1 else {
            EVP_MD_CTX_free(context)
            return nil
        }
        self.context = context
    }

    /// SHA-256, which libcrypto always has.
    package static func sha256() -> MessageDigest {
        guard let digest = MessageDigest(algorithm: "sha256") else { fatalError("libcrypto has no SHA-256") }
        return digest
    }

    deinit { EVP_MD_CTX_free(context) }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        _ = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    package func finish() -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_DigestFinal_ex(context, &output, &length)
        return Array(output.prefix(Int(length)))
    }

    /// The digest of a region of a file, read in pieces.
    package static func of(_ file: any BodyFile, offset: Int64, length: Int64, algorithm: String)
        throws(TransferFailure)
        -> [UInt8]?
    {
        guard let digest = MessageDigest(algorithm: algorithm) else { return nil }
        try file.forEachPiece(offset: offset, length: length) { digest.update($0) }
        return digest.finish()
    }
}

@available(*, unavailable)
extension MessageDigest: Sendable {}
