"""Scenario 10, long life: a daemon that runs for weeks must come back to its idle size after jobs
are done and cleared, round after round, and after a big queue is cleared."""

import time

import measure
from control import IDLE_SETTLE
from benchenv import log
from context import Bench, row
from daemon import Uploadd, fresh_uploadd

# Measured once the daemon is at rest: the heap is trimmed a second after the last clear, big
# answer or compaction, and libdispatch ends its idle worker threads after 5 s, which gives their
# memory back (after a clear of 20,000 jobs, 23 MiB of RssAnon until then, 8 after). What those
# threads' malloc caches held goes back to the heap only as they end, so the daemon trims again
# 6 s after its first trim (HeapTrimmer.afterIdleThreadsEnd): 7 s after the clear, measured at 8.
SETTLE = IDLE_SETTLE + 2.0
BATCH = 500


def memory(d: Uploadd) -> dict:
    journal = d.state / "journal"
    return {"rss_mib": measure.status_kib(d.pid, "VmRSS") / 1024, "anon_mib": measure.status_kib(d.pid, "RssAnon") / 1024,
            "journal_kib": (journal.stat().st_size if journal.exists() else 0) / 1024}


def add_all(rpc, sources: list[str], destination: str) -> list[int]:
    ids = []
    for start in range(0, len(sources), BATCH):
        chunk = sources[start:start + BATCH]
        answers = rpc.batch([("job.add", {"source": s, "destination": destination, "snapshot": "none"}) for s in chunk])
        ids += [a["id"] for a in answers]
    return ids


def wait_until_done(rpc, count: int, timeout: float = 3600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = rpc.call("daemon.status")["jobs"]
        if jobs.get("completed", 0) >= count:
            return
        if jobs.get("failed", 0):
            raise RuntimeError(f"{jobs['failed']} jobs failed")
        time.sleep(0.2)
    raise RuntimeError(f"{count} jobs did not complete in {timeout:.0f} s")


def long_life(b: Bench) -> dict:
    rounds, jobs, queued = b.size["life_rounds"], b.size["life_jobs"], b.size["life_queue"]
    sources = [str(b.file(f"life/line-{i}.txt", 16)) for i in range(jobs)]

    def one(i):
        with fresh_uploadd(b.dir / "long-life", b.registry) as d:
            time.sleep(1.0)
            curve = [{"round": "start", **memory(d)}]
            with d.rpc() as rpc:
                for r in range(1, rounds + 1):
                    add_all(rpc, sources, f"file://{b.shm}/life-out/")
                    wait_until_done(rpc, jobs)
                    rpc.call("job.clear")
                    time.sleep(SETTLE)
                    curve.append({"round": r, **memory(d)})
                    log(f"  long life round {r}: VmRSS {curve[-1]['rss_mib']:.1f} MiB, RssAnon {curve[-1]['anon_mib']:.1f} MiB")
                # A big queue: added (nothing listens on port 1, and the jobs are paused at once),
                # then canceled and cleared.
                ids = []
                for start in range(0, queued, BATCH):
                    count = min(BATCH, queued - start)
                    ids += add_all(rpc, sources[:1] * count, "http://127.0.0.1:1/nowhere/")
                    rpc.call("job.pause", {"all": True})
                for start in range(0, len(ids), 5000):
                    rpc.call("job.cancel", {"ids": ids[start:start + 5000]})
                rpc.call("job.clear")
                time.sleep(SETTLE)
                curve.append({"round": f"{queued} queued, cleared", **memory(d)})
            first, last, big = curve[1], curve[-2], curve[-1]
            return {"curve": curve, "first_rss": first["rss_mib"], "last_rss": last["rss_mib"],
                    "growth": last["rss_mib"] / first["rss_mib"], "after_queue_rss": big["rss_mib"],
                    "journal_kib": big["journal_kib"]}

    raw, failed = b.alternate([("uploadd", one)], runs=1)
    r, why = raw["uploadd"], failed.get("uploadd")
    get = lambda key: [x[key] for x in r]  # noqa: E731
    return {"title": f"long life: {rounds} rounds of {jobs:,} small jobs added, done and cleared, then {queued:,} "
                     f"queued and cleared (idle VmRSS {SETTLE:.0f} s after each)", "raw": raw, "rows": [
        row("idle RSS after round 1", "MiB", get("first_rss"), not_run=why),
        row(f"idle RSS after round {rounds}", "MiB", get("last_rss"), not_run=why),
        row(f"idle RSS, round {rounds} ÷ round 1", "×", get("growth"), target="≤ 1.2", check=("value", "<=", 1.2),
            not_run=why),
        row(f"idle RSS after {queued:,} queued jobs were cleared", "MiB", get("after_queue_rss"), target="≤ 40 MiB",
            check=("value", "<=", 40), not_run=why),
        row("journal at the end", "KiB", get("journal_kib"), not_run=why),
    ]}
