import Foundation
import UploadWire

/// Checks of option and argument values that need no daemon, so mistakes fail fast with exit 64.
enum ArgumentValues {
    /// A job ID as `add` and `list` print it: a positive decimal number.
    static func jobID(_ text: String) throws(UsageError) -> JobID {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let id = JobID(text)
        else {
            throw UsageError("'\(text)' is not a job ID; IDs are positive decimal numbers, as 'uploadctl list' shows")
        }
        return id
    }

    /// Several job IDs, without duplicates, in the order given.
    /// `--batch N`: a batch is named by its first job's ID.
    static func batch(_ parsed: ParsedArguments) throws(UsageError) -> JobID? {
        try parsed.value("--batch").map { (text) throws(UsageError) in
            do { return try jobID(text) } catch {
                throw UsageError("--batch needs a batch ID (the first job's ID, as add prints it), not '\(text)'")
            }
        }
    }

    static func jobIDs(_ texts: [String]) throws(UsageError) -> [JobID] {
        var seen = Set<JobID>()
        var ids: [JobID] = []
        for text in texts {
            let id = try jobID(text)
            if seen.insert(id).inserted { ids.append(id) }
        }
        return ids
    }

    /// A value of a string enum, with the allowed values in the error.
    static func choice<Value: RawRepresentable & CaseIterable>(
        _ text: String, option: String, as type: Value.Type
    ) throws(UsageError) -> Value where Value.RawValue == String {
        guard let value = Value(rawValue: text) else {
            let allowed = Value.allCases.map(\.rawValue).joined(separator: ", ")
            throw UsageError("'\(text)' is not a valid \(option) value; use one of: \(allowed)")
        }
        return value
    }

    /// A chunk SIZE such as `8M` (1 byte to 5G), checked with the daemon's own parser, sent as typed.
    static func chunkSize(_ text: String, option: String) throws(UsageError) -> String {
        do {
            _ = try ChunkSize.parse(text)
        } catch {
            throw UsageError("\(option): \(error.description)")
        }
        return text
    }

    /// A whole number, possibly negative.
    static func integer(_ text: String, option: String) throws(UsageError) -> Int {
        guard let value = Int(text) else { throw UsageError("\(option) needs a whole number, not '\(text)'") }
        return value
    }

    /// A number of seconds, fractions allowed, not negative.
    static func seconds(_ text: String, option: String) throws(UsageError) -> Double {
        guard let value = Double(text), value.isFinite, value >= 0 else {
            throw UsageError("\(option) needs a number of seconds (0 or more), not '\(text)'")
        }
        return value
    }

    /// `K: V`, as curl's `-H` takes it, by the daemon's own rules (`HeaderSyntax`).
    static func header(_ text: String) throws(UsageError) -> String {
        guard let header = HeaderSyntax.parse(text) else {
            throw UsageError("--header needs 'Name: value' (a name without spaces, no line breaks), not '\(text)'")
        }
        if let refusal = HeaderSyntax.refusal(ofName: header.name) { throw UsageError("--header: \(refusal)") }
        return text
    }

    /// `K=V`, as curl's `-F` takes it, by the daemon's own rules (`FieldSyntax`).
    static func field(_ text: String) throws(UsageError) -> String {
        guard FieldSyntax.parse(text) != nil else {
            throw UsageError("--field needs 'name=value', not '\(text)'")
        }
        return text
    }
}
