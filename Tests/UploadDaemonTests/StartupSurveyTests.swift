import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// The scheduler's first look at the replayed jobs is split across the cores when there are
/// many; split or not, it must find the same.
@Suite("Start-up survey of the replayed jobs")
struct StartupSurveyTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// Jobs of every state, some with a client token, a retry time, a cached copy, an owed hook or
    /// a partial upload left behind.
    static func jobs(_ count: Int) -> JobTable {
        var jobs = JobTable()
        let states: [JobState] = [.queued, .running, .paused, .completed, .failed, .canceled, .queued]
        for id in 1...UInt64(count) {
            var job = Job(
                id: JobID(id), spec: JobSpec(source: "/data/\(id)", destination: "https://example.com/up/"),
                createdAt: now)
            job.state = states[Int(id) % states.count]
            if id % 5 == 0 { job.spec.clientToken = "token-\(id)" }
            if id % 7 == 6 || id % 7 == 2 { job.nextAttemptAt = now.addingTimeInterval(id % 2 == 0 ? 60 : -60) }
            if id % 3 == 0 {
                job.snapshot = SourceSnapshot(
                    kind: .copy, path: "/cache/\(id)", size: 1, device: 1, inode: id, modificationTimeNanoseconds: 1)
            }
            if id % 11 == 0 { job.hookPending = true }
            if id % 13 == 0 { job.checkpoint = Checkpoint(kind: "tus", payload: [1]) }
            jobs[job.id] = job
        }
        return jobs
    }

    /// The survey as one pass would make it.
    static func oneByOne(_ jobs: JobTable) -> StartupSurvey {
        var survey = StartupSurvey()
        for job in jobs.values {
            if job.state == .running { survey.interrupted.append(job) } else { survey.take(job, now: now) }
        }
        return survey
    }

    @Test(arguments: [50, 25_003])
    func surveyingInPartsFindsWhatOnePassFinds(count: Int) {
        let jobs = Self.jobs(count)
        let survey = StartupSurvey(surveying: jobs, now: Self.now)
        let expected = Self.oneByOne(jobs)
        #expect(Set(survey.interrupted.map(\.id)) == Set(expected.interrupted.map(\.id)))
        #expect(survey.ready.map(\.id).sorted() == expected.ready.map(\.id).sorted())
        #expect(Set(survey.ready.map(\.id)).count == survey.ready.count)
        #expect(survey.delayed == expected.delayed)
        #expect(survey.clientTokens == expected.clientTokens)
        #expect(survey.cachedFiles == expected.cachedFiles)
        #expect(survey.owedHooks.sorted() == expected.owedHooks.sorted())
        #expect(survey.owedDiscards.sorted() == expected.owedDiscards.sorted())
        // And what one pass finds is what each job says.
        let queued = jobs.values.filter { $0.state == .queued }
        #expect(survey.ready.count + survey.delayed.count == queued.count)
        #expect(survey.interrupted.count == jobs.values.filter { $0.state == .running }.count)
        #expect(!survey.delayed.isEmpty && !survey.clientTokens.isEmpty && !survey.owedDiscards.isEmpty)
    }
}
