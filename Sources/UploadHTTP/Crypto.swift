import COpenSSL
import Foundation

/// SHA-256 and HMAC-SHA256 from OpenSSL's libcrypto, for AWS Signature Version 4.
package enum Crypto {
    package static let sha256Length = 32

    /// The SHA-256 digest of `bytes`. The corresponding C call is `EVP_Digest`.
    package static func sha256<Bytes: ContiguousBytes>(_ bytes: Bytes) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: sha256Length)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { output in
                EVP_Digest(
                    input.baseAddress ?? UnsafeRawPointer(output.baseAddress!), input.count,
                    output.baseAddress!.assumingMemoryBound(to: UInt8.self), &length, EVP_sha256(), nil)
            }
        }
        precondition(ok == 1 && length == sha256Length, "libcrypto could not compute SHA-256")
        return digest
    }

    package static func sha256(_ text: String) -> [UInt8] { sha256(Array(text.utf8)) }

    /// The HMAC-SHA256 of `data` under `key`. The corresponding C call is `HMAC`.
    package static func hmacSHA256<Key: ContiguousBytes, Data: ContiguousBytes>(key: Key, data: Data) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: sha256Length)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            data.withUnsafeBytes { dataBytes in
                mac.withUnsafeMutableBytes { output in
                    // An empty buffer has no base address; libcrypto wants a valid pointer even for zero bytes.
                    let empty: [UInt8] = [0]
                    return empty.withUnsafeBytes { placeholder in
                        HMAC(
                            EVP_sha256(), keyBytes.baseAddress ?? placeholder.baseAddress, Int32(keyBytes.count),
                            (dataBytes.baseAddress ?? placeholder.baseAddress)?.assumingMemoryBound(to: UInt8.self),
                            dataBytes.count, output.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
                    }
                }
            }
        }
        precondition(result != nil && length == sha256Length, "libcrypto could not compute HMAC-SHA256")
        return mac
    }

    package static func hmacSHA256<Key: ContiguousBytes>(key: Key, _ text: String) -> [UInt8] {
        hmacSHA256(key: key, data: Array(text.utf8))
    }
}

/// Lowercase hexadecimal, as SigV4 writes digests and signatures.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    package static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var characters: [UInt8] = []
        characters.reserveCapacity(64)
        for byte in bytes {
            characters.append(digits[Int(byte >> 4)])
            characters.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: characters, as: UTF8.self)
    }
}

/// Standard base64 with padding, as S3's checksum headers carry it.
package enum Base64 {
    package static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// The four big-endian bytes of a 32-bit checksum, base64-encoded (`x-amz-checksum-crc32c`).
    package static func encodeBigEndian(_ value: UInt32) -> String {
        encode([UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
    }
}
