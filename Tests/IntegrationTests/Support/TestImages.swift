import Foundation
import Testing

/// Images made for the tests with Debian's own tools: libvips (`vips`) draws them, exiftool writes
/// their EXIF, heif-enc encodes HEIC, ImageMagick makes a PNG with alpha.
enum TestImages {
    static func run(_ tool: String, _ arguments: [String]) throws {
        let result = try Command.run(tool, arguments, timeout: 300)
        guard result.status == 0 else {
            throw TestImageError(description: "\(tool) \(arguments.joined(separator: " ")): \(result)")
        }
    }

    struct TestImageError: Error, CustomStringConvertible {
        var description: String
    }

    /// A photo-like JPEG: noise (which compresses like a real photo, badly), `width`x`height`.
    static func noisyJPEG(at path: String, width: Int, height: Int, quality: Int = 95, sigma: Int = 50) throws {
        let work = path + ".parts"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        try run(
            "/usr/bin/vips",
            ["gaussnoise", "\(work)/n.v", "\(width)", "\(height)", "--mean", "128", "--sigma", "\(sigma)"])
        try run("/usr/bin/vips", ["cast", "\(work)/n.v", "\(work)/c.v", "uchar"])
        try run("/usr/bin/vips", ["bandjoin", "\(work)/c.v \(work)/c.v \(work)/c.v", "\(work)/rgb.v"])
        try run("/usr/bin/vips", ["copy", "\(work)/rgb.v", "\(work)/srgb.v", "--interpretation", "srgb"])
        try run("/usr/bin/vips", ["copy", "\(work)/srgb.v", "\(path)[Q=\(quality)]"])
    }

    /// What a phone writes: turned (Orientation 6: the camera was held upright), with its position
    /// and capture time.
    static func phonePhoto(at path: String, width: Int = 4000, height: Int = 3000) throws {
        try noisyJPEG(at: path, width: width, height: height, sigma: 30)
        try run(
            "/usr/bin/exiftool",
            [
                "-q", "-overwrite_original", "-n", "-Orientation=6", "-GPSLatitude=48.8583",
                "-GPSLatitudeRef=N", "-GPSLongitude=2.2944", "-GPSLongitudeRef=E",
                "-DateTimeOriginal=2024:05:01 12:34:56", "-Make=TestCam", "-Model=Phone 1", path,
            ])
    }

    /// A PNG whose pixels are red at 30% opacity.
    static func translucentPNG(at path: String) throws {
        try run("/usr/bin/convert", ["-size", "400x300", "xc:rgba(255,0,0,0.3)", path])
    }

    /// A HEIC photo, as iPhones write them (heif-enc, from a JPEG).
    static func heic(at path: String) throws {
        let jpeg = path + ".source.jpg"
        defer { try? FileManager.default.removeItem(atPath: jpeg) }
        try noisyJPEG(at: jpeg, width: 1200, height: 900, sigma: 20)
        try run("/usr/bin/heif-enc", ["-q", "60", jpeg, "-o", path])
    }

    /// A PNG that declares 100000x100000 pixels (10 gigapixels) in 100 KB: a decompression bomb.
    static func bombPNG(at path: String) throws {
        try run(
            "/usr/bin/python3",
            [
                "-c",
                """
                import struct, sys, zlib
                def chunk(kind, data):
                    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
                side = 100000
                rows = zlib.compress(b'\\x00' * (side + 1) * 200, 9)
                header = struct.pack('>IIBBBBB', side, side, 8, 0, 0, 0, 0)
                open(sys.argv[1], 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', header) + chunk(b'IDAT', rows) + chunk(b'IEND', b''))
                """,
                path,
            ])
    }

    /// `vipsheader`'s one line: "NAME: 1536x2048 uchar, 3 bands, srgb, jpegload".
    static func header(_ path: String) throws -> String {
        try Command.run("/usr/bin/vipsheader", [path]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func dimensions(_ path: String) throws -> (width: Int, height: Int)? {
        let line = try header(path)
        guard let size = line.split(separator: " ").dropFirst().first else { return nil }
        let numbers = size.split(separator: "x").compactMap { Int($0) }
        return numbers.count == 2 ? (numbers[0], numbers[1]) : nil
    }

    /// exiftool's tags of a file, `-s` names: ["Orientation": "1", "GPSLatitude": "48.8583", ...].
    static func tags(_ path: String) throws -> [String: String] {
        let output = try Command.run("/usr/bin/exiftool", ["-s", "-n", "-G0", path]).stdout
        var tags: [String: String] = [:]
        for line in output.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = line[..<colon].split(separator: " ").last.map(String.init) ?? ""
            tags[key] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return tags
    }

    /// The pixel at (x, y), as `vips getpoint` says: [255, 178, 178].
    static func pixel(_ path: String, x: Int, y: Int) throws -> [Double] {
        try Command.run("/usr/bin/vips", ["getpoint", path, "\(x)", "\(y)"]).stdout.split(separator: " ").compactMap {
            Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}
