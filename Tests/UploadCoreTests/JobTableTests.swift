import Testing
import UploadWire

@testable import UploadCore

/// The job table in pages (issue 51): it must answer as the dictionary it replaced did.
@Suite struct JobTableTests {
    /// Random adds, changes and removals, against a dictionary doing the same.
    @Test func itAnswersAsADictionaryWould() {
        var generator = SystemRandomNumberGenerator()
        var table = JobTable()
        var model: [JobID: Job] = [:]
        for step in 0..<20_000 {
            let id = JobID(UInt64.random(in: 1...3_000, using: &generator))
            switch step % 5 {
            case 0, 1, 2:
                var job = Fixtures.job(id.rawValue)
                job.bytesAcked = Int64(step)
                let replaced = table.updateValue(job, forKey: id)
                #expect(replaced == model.updateValue(job, forKey: id))
            case 3:
                let removed = table.removeValue(forKey: id)
                #expect(removed == model.removeValue(forKey: id))
            default:
                table.modify(id) { $0.bytesAcked += 1 }
                if model[id] != nil { model[id]!.bytesAcked += 1 }
            }
            #expect(table[id] == model[id])
        }
        #expect(table.count == model.count)
        #expect(Array(table.keys) == model.keys.sorted(), "by ID")
        #expect(Array(table.values) == model.keys.sorted().map { model[$0]! })
        for id in 1...3_000 as ClosedRange<UInt64> { #expect(table[JobID(id)] == model[JobID(id)]) }
    }

    /// A page goes when its last job does; IDs far apart cost a page each, not the room between.
    @Test func pagesComeAndGoWithTheirJobs() {
        var table = JobTable()
        for id in [1, 2, 300, UInt64.max, UInt64.max - 1, 1 << 40] as [UInt64] {
            table[JobID(id)] = Job(
                id: JobID(id), spec: JobSpec(source: "/f", destination: "file:///o/"), createdAt: .now)
        }
        #expect(table.count == 6 && table.pageCount == 4)
        #expect(Array(table.keys) == [1, 2, 300, 1 << 40, UInt64.max - 1, UInt64.max].map(JobID.init(_:)))
        table[JobID(1)] = nil
        #expect(table.pageCount == 4)
        table[JobID(2)] = nil
        #expect(table.pageCount == 3 && table[JobID(2)] == nil && table.count == 4)
        #expect(table.removeValue(forKey: JobID(2)) == nil && table.count == 4)
        for id in [300, UInt64.max, UInt64.max - 1, 1 << 40] as [UInt64] { table[JobID(id)] = nil }
        #expect(table.isEmpty && table.pageCount == 0 && Array(table).isEmpty)
    }

    /// The IDs after a given one, in order, across pages and past IDs that are gone.
    @Test func theIDsAfterOneStartRightAfterIt() {
        var table = JobTable()
        let ids: [UInt64] = [1, 2, 255, 256, 257, 600, 70_000, UInt64.max]
        for id in ids {
            table[JobID(id)] = Job(
                id: JobID(id), spec: JobSpec(source: "/f", destination: "file:///o/"), createdAt: .now)
        }
        for after in [0, 1, 2, 3, 254, 255, 256, 511, 600, 69_999, 70_000, UInt64.max - 1, UInt64.max] as [UInt64] {
            #expect(
                Array(table.keys(after: JobID(after))) == ids.filter { $0 > after }.map(JobID.init(_:)),
                "after \(after)")
        }
        #expect(Array(table.keys(after: nil)) == ids.map(JobID.init(_:)))
    }

    /// A change through `modify` is made on the job's own fields, not on a copy of them.
    @Test func modifyChangesTheJobInPlace() {
        var table = JobTable()
        table[JobID(7)] = Fixtures.job(7)
        let before = ObjectIdentifier(table[JobID(7)]!.storage)
        table.modify(JobID(7)) { $0.bytesAcked = 42 }
        #expect(table[JobID(7)]?.bytesAcked == 42)
        #expect(ObjectIdentifier(table[JobID(7)]!.storage) == before)
        let missing: Void? = table.modify(JobID(8)) { job in job.bytesAcked = 1 }
        #expect(missing == nil && table[JobID(8)] == nil)
    }
}

/// The ready queue's members as bits (issue 51): a set as `Set<JobID>` was.
@Suite struct JobIDSetTests {
    @Test func itAnswersAsASetWould() {
        var generator = SystemRandomNumberGenerator()
        var bits = JobIDSet()
        var model = Set<JobID>()
        for step in 0..<20_000 {
            let id = JobID(UInt64.random(in: 1...20_000, using: &generator))
            if step % 3 == 2 {
                let removed = bits.remove(id)
                #expect(removed == (model.remove(id) != nil))
            } else {
                let inserted = bits.insert(id)
                #expect(inserted == model.insert(id).inserted)
            }
            #expect(bits.contains(id) == model.contains(id) && bits.count == model.count)
        }
        for id in 0...20_001 as ClosedRange<UInt64> { #expect(bits.contains(JobID(id)) == model.contains(JobID(id))) }
    }

    @Test func pagesGoWithTheirLastID() {
        var bits = JobIDSet()
        for id in [0, 63, 64, 4095, 4096, UInt64.max] as [UInt64] {
            let inserted = bits.insert(JobID(id))
            #expect(inserted)
        }
        #expect(bits.pageCount == 3 && bits.count == 6 && !bits.contains(JobID(1)))
        for id in [0, 63, 64, 4095] as [UInt64] {
            let removed = bits.remove(JobID(id))
            #expect(removed)
        }
        let removedAgain = bits.remove(JobID(0))
        #expect(bits.pageCount == 2 && !removedAgain)
        for id in [4096, UInt64.max] as [UInt64] {
            let removed = bits.remove(JobID(id))
            #expect(removed)
        }
        #expect(bits.isEmpty && bits.pageCount == 0)
    }
}
