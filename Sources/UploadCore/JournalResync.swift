import CShims
import Foundation
import UploadWire

/// Where damage in a journal ends. Every record has its own length and checksum, so one damaged
/// record (a flipped bit, a sector of zeros) need not cost the records after it: replay goes on
/// from the next place where whole, valid records begin again, and only the bytes in between are
/// set aside.
extension JournalFormat {
    /// The damaged region that begins at `start`, where the frame is not whole and valid;
    /// `recordReason` says why its record was refused when the frame was whole.
    static func damagedRegion(in bytes: [UInt8], from start: Int, version: UInt32, recordReason: String?)
        -> JournalDamage
    {
        let frames = FrameChecker(bytes: bytes, version: version)
        let claimed = claimedEnd(of: bytes, at: start)
        // Damage inside one record (a flipped bit) leaves its length intact, and the length leads
        // to the next record.
        if let claimed, claimed <= bytes.count, claimed == bytes.count || frames.validEnd(at: claimed) != nil {
            let reason = recordReason ?? "a record's checksum does not match"
            if let known = frames.knownRecord(in: start..<claimed, lengthIntact: true) {
                return JournalDamage(offset: start, length: claimed - start, reason: reason, record: known)
            }
            // Unless the checksum vouches for the record, its length may be damaged too and the
            // stretch it claims hold whole records.
            if let inner = frames.resynchronisation(after: start, before: claimed) {
                return JournalDamage(
                    offset: start, length: inner - start, reason: reason,
                    record: frames.knownRecord(in: start..<inner, lengthIntact: false) ?? .unknown)
            }
            return JournalDamage(
                offset: start, length: claimed - start, reason: reason,
                record: frames.guessedRecord(in: start..<claimed))
        }
        let resumesAt = frames.resynchronisation(after: start)
        let end = resumesAt ?? bytes.count
        // Nothing whole after a record that runs past the end: the write a crash cut short.
        let isTornTail = resumesAt == nil && (claimed.map { $0 > bytes.count } ?? (bytes.count - start < frameOverhead))
        return JournalDamage(
            offset: start, length: end - start,
            reason: reason(at: start, in: bytes, isTornTail: isTornTail, recordReason: recordReason),
            record: isTornTail ? .unknown : frames.knownRecord(in: start..<end, lengthIntact: false) ?? .unknown,
            isTornTail: isTornTail)
    }

    private static func reason(at start: Int, in bytes: [UInt8], isTornTail: Bool, recordReason: String?) -> String {
        guard bytes.count - start >= frameOverhead else { return "a record header is torn" }
        let length = readUInt32(bytes, at: start)
        if length > maxPayloadSize { return "a record claims an impossible length \(length)" }
        if start + frameOverhead + Int(length) > bytes.count {
            return isTornTail ? "the last record is torn" : "a record claims \(length) bytes, more than the file holds"
        }
        return recordReason ?? "a record's checksum does not match"
    }

    /// The reflected CRC32C polynomial: also what flipping the last bit of a checksummed body
    /// does to its checksum.
    private static let crc32cPolynomial: UInt32 = 0x82F6_3B78

    /// Puts back the one flipped bit that makes `body` match `checksum`; true if one does, or if
    /// none is needed (the damage was in the frame's length or in the checksum itself). A CRC is
    /// linear: a flipped bit changes it by an amount that depends only on how many bits follow,
    /// so the difference points at the bit.
    static func restoreOneBit(_ body: inout [UInt8], checksum: UInt32) -> Bool {
        let difference = body.withUnsafeBytes { CShims_crc32c(0, $0.baseAddress, $0.count) } ^ checksum
        if difference == 0 || difference.nonzeroBitCount == 1 { return true }
        var change = crc32cPolynomial
        // Bits are checksummed from the lowest of each byte up: walk back from the last one.
        var position = body.count * 8
        while position > 0 {
            position -= 1
            if change == difference {
                body[position >> 3] ^= 1 << (position & 7)
                return true
            }
            change = change & 1 == 0 ? change >> 1 : (change >> 1) ^ crc32cPolynomial
        }
        return false
    }
}

/// Checks frames anywhere in a journal: where whole records begin again after damage, and whose
/// record a damaged region held.
private struct FrameChecker {
    let bytes: [UInt8]
    let version: UInt32
    /// Format 1's JSON decoder, made once for the search.
    private let formatOne: JSONDecoder?

    init(bytes: [UInt8], version: UInt32) {
        self.bytes = bytes
        self.version = version
        formatOne = version < 2 ? JSONDecoder() : nil
    }

    /// Where the frame at `offset` ends, if it is whole, its checksum matches and its payload decodes.
    func validEnd(at offset: Int) -> Int? {
        guard let end = JournalFormat.claimedEnd(of: bytes, at: offset), end <= bytes.count else { return nil }
        let matches = bytes.withUnsafeBytes { file in
            let crc = file.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian
            let body = UnsafeRawBufferPointer(rebasing: file[(offset + 8)..<end])
            return CShims_crc32c(0, body.baseAddress, body.count) == crc
        }
        return matches && decode(bytes[(offset + 8)..<end]) != nil ? end : nil
    }

    /// The record of a frame's body (its type, then its payload), if it decodes.
    private func decode(_ body: ArraySlice<UInt8>) -> JournalRecord? {
        body.withUnsafeBytes { raw in
            try? JournalFormat.decodePayload(
                type: raw[0], UnsafeRawBufferPointer(rebasing: raw[1...]), version: version, formatOne: formatOne)
        } ?? nil
    }

    /// The first offset after `start` (and before `limit`) where whole records begin again: a
    /// valid frame after which the lengths lead on to another valid frame, to the end of the file
    /// or to a last record a crash cut off, within a few records (those between are damaged
    /// again). A valid frame alone could be damaged bytes that happen to check; two checksums
    /// that match, one where the other's lengths lead, cannot.
    func resynchronisation(after start: Int, before limit: Int? = nil) -> Int? {
        let last = min((limit ?? bytes.count) - 1, bytes.count - JournalFormat.frameOverhead)
        guard start + 1 <= last else { return nil }
        return bytes.withUnsafeBytes { file -> Int? in
            for candidate in (start + 1)...last {
                // Lengths first, read in place (cheap): most offsets in damaged bytes claim a
                // length that cannot be, or one after which no frame can begin.
                guard let end = Self.claimedEnd(in: file, at: candidate), end <= file.count,
                    end == file.count || file.count - end < JournalFormat.frameOverhead
                        || Self.claimedEnd(in: file, at: end) != nil
                else { continue }
                if validEnd(at: candidate) != nil && leadsToRecords(from: end) { return candidate }
            }
            return nil
        }
    }

    /// `JournalFormat.claimedEnd` on the bytes in place, for the scan.
    private static func claimedEnd(in file: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard file.count - offset >= JournalFormat.frameOverhead else { return nil }
        let length = Int(UInt32(littleEndian: file.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        return length <= JournalFormat.maxPayloadSize ? offset + JournalFormat.frameOverhead + length : nil
    }

    /// Whether the frames' lengths from `offset` lead to a valid frame, to the end of the file or
    /// to a torn last record within a few frames.
    private func leadsToRecords(from offset: Int) -> Bool {
        var offset = offset
        for _ in 0..<8 {
            if offset == bytes.count || isTorn(at: offset) || validEnd(at: offset) != nil { return true }
            guard let end = JournalFormat.claimedEnd(of: bytes, at: offset), end <= bytes.count else { return false }
            offset = end
        }
        return false
    }

    /// Whether the frame at `offset` is a last record cut off by the end of the file.
    private func isTorn(at offset: Int) -> Bool {
        guard let end = JournalFormat.claimedEnd(of: bytes, at: offset) else {
            return bytes.count - offset < JournalFormat.frameOverhead
        }
        return end > bytes.count
    }

    /// Whose record `region` held, if its checksum tells: the region is then that one record.
    /// With `lengthIntact` (the region is one frame by its own length), the body (type and
    /// payload) may match the checksum with one bit put back; otherwise the length was damaged,
    /// and the body must match as it is.
    func knownRecord(in region: Range<Int>, lengthIntact: Bool) -> DamagedRecord? {
        guard region.count >= JournalFormat.frameOverhead else { return nil }
        let checksum = JournalFormat.readUInt32(bytes, at: region.lowerBound + 4)
        var body = bytes[(region.lowerBound + 8)..<region.upperBound]
        if lengthIntact {
            var restored = Array(body)
            guard JournalFormat.restoreOneBit(&restored, checksum: checksum) else { return nil }
            body = restored[...]
        } else {
            guard body.withUnsafeBytes({ CShims_crc32c(0, $0.baseAddress, $0.count) }) == checksum else { return nil }
        }
        return decode(body).map { record in record.jobID.map { .job($0, certain: true) } ?? .noJob }
    }

    /// Whose record `region`, one frame by its own length, probably held: the job ID read where
    /// job, progress and removal records keep it, which may be damaged too.
    func guessedRecord(in region: Range<Int>) -> DamagedRecord {
        let type = bytes[region.lowerBound + 8]
        guard version >= 2, (1...3).contains(type), region.count > JournalFormat.frameOverhead else { return .unknown }
        let id = bytes[(region.lowerBound + 9)..<region.upperBound].withUnsafeBytes { payload in
            var reader = BinaryReader(payload)
            return try? reader.readUInt64()
        }
        return id.map { .job(JobID($0), certain: false) } ?? .unknown
    }
}
