import UploadWire

/// A set of job IDs as bits, in pages of `pageSize` IDs found by page number: IDs are handed out
/// in order, so the jobs of a queue are dense. A million IDs take 128 KiB, where a `Set<JobID>`
/// took 16 MiB (8 bytes a slot, in a power of two at up to 75% load). A page goes with its last ID.
public struct JobIDSet: Sendable, Equatable {
    static let pageShift: UInt64 = 12
    static let wordsPerPage = (1 << Int(pageShift)) / 64

    private struct Page: Sendable, Equatable {
        var words = [UInt64](repeating: 0, count: JobIDSet.wordsPerPage)
        var count = 0
    }

    private var pages: [UInt64: Page] = [:]
    public private(set) var count = 0

    public init() {}

    public var isEmpty: Bool { count == 0 }

    /// How many pages are kept.
    var pageCount: Int { pages.count }

    private static func locate(_ id: JobID) -> (page: UInt64, word: Int, bit: UInt64) {
        let offset = Int(id.rawValue & ((1 << pageShift) - 1))
        return (id.rawValue >> pageShift, offset / 64, 1 << UInt64(offset % 64))
    }

    public func contains(_ id: JobID) -> Bool {
        let (page, word, bit) = Self.locate(id)
        return (pages[page]?.words[word] ?? 0) & bit != 0
    }

    /// False when the ID was in the set already.
    @discardableResult
    public mutating func insert(_ id: JobID) -> Bool {
        let (page, word, bit) = Self.locate(id)
        let inserted = Self.flip(&pages[page, default: Page()], word: word, bit: bit, to: true)
        if inserted { count += 1 }
        return inserted
    }

    /// False when the ID was not in the set.
    @discardableResult
    public mutating func remove(_ id: JobID) -> Bool {
        let (page, word, bit) = Self.locate(id)
        guard (pages[page]?.words[word] ?? 0) & bit != 0 else { return false }
        _ = Self.flip(&pages[page]!, word: word, bit: bit, to: false)
        count -= 1
        if pages[page]!.count == 0 { pages[page] = nil }
        return true
    }

    /// Sets or clears a bit of `page` in place; whether it changed.
    private static func flip(_ page: inout Page, word: Int, bit: UInt64, to set: Bool) -> Bool {
        guard (page.words[word] & bit != 0) != set else { return false }
        page.words[word] ^= bit
        page.count += set ? 1 : -1
        return true
    }
}
