"""Scenarios of the daemon itself: adds and list (5), restart (6), memory (7), idle cost (8),
uploadctl's start-to-exit time (9), the queue's size from 1,000 to 1,000,000 jobs (13), a dead
server (14)."""

import json
import shlex
import shutil
import socket
import time

import measure
import transfers
from benchenv import log
from context import MIB, Bench, human_size, row, values
from daemon import Uploadd, fresh_uploadd

# A queue that does not drain: one transfer at a time, 1 KiB/s, and a 64 MiB "blocker" job in it,
# so every job added after it stays queued (and costs no upload while adds are measured).
QUEUE_CONFIG = "[daemon]\ntransfers = 1\nrate_limit = 1K\n"
IDLE_SETTLE = 6.0


def queue_daemon(b: Bench, name: str, state_from=None) -> tuple[Uploadd, float]:
    d = Uploadd(b.dir / name, b.registry, QUEUE_CONFIG)
    d.wipe()
    if state_from is not None:
        shutil.copytree(state_from, d.state)
    return d, d.start()


def add_params(b: Bench) -> dict:
    return {"source": str(b.file("tiny.txt", 16)), "destination": f"{b.nginx}/dav/bench/queued/",
            "protocol": "put", "snapshot": "none"}


def add_blocker(b: Bench, rpc) -> None:
    rpc.call("job.add", {"source": str(b.file("blocker.bin", 64 * MIB)), "protocol": "put", "snapshot": "none",
                         "destination": f"{b.nginx}/dav/bench/blocker/"})


def job_count(answer: bytes) -> int:
    result = json.loads(answer)["result"]
    return len(result["jobs"] if isinstance(result, dict) else result)


def adds(b: Bench) -> dict:
    n, batch = b.size["adds"], b.size["batch"]

    def one(i):
        d, _ = queue_daemon(b, "adds")
        try:
            with d.rpc() as rpc:
                add_blocker(b, rpc)
                params = add_params(b)
                start = time.perf_counter()
                for _ in range(n):
                    rpc.call("job.add", params)
                single = time.perf_counter() - start
                latencies = []
                for _ in range(5):
                    start = time.perf_counter()
                    rpc.send(rpc.request("job.list", {}))
                    answer = rpc.read_answer()
                    latencies.append(time.perf_counter() - start)
                if (count := job_count(answer)) != n + 1:
                    raise RuntimeError(f"job.list returned {count} jobs, not {n + 1}")
                ctl_list = [d.ctl("--json", "list", check="uploadctl --json list").wall for _ in range(3)]
                start = time.perf_counter()
                for first in range(0, n, batch):
                    rpc.batch([("job.add", params)] * min(batch, n - first))
                batched = time.perf_counter() - start
        finally:
            d.stop()
        return {"single_per_s": n / single, "batched_per_s": n / batched,
                "list_rpc_ms": sorted(latencies)[2] * 1000, "list_ctl_ms": sorted(ctl_list)[1] * 1000}

    raw, failed = b.alternate([("uploadd", one)])
    why = failed.get("uploadd")
    r = raw["uploadd"]
    return {"title": f"{n:,} job.add over one connection; list of {n:,} jobs", "raw": raw, "rows": [
        row("durable adds/s, one at a time", "adds/s", values(r, "single_per_s"), target="≥ 2,500/s",
            check=("value", ">=", 2500), not_run=why),
        row(f"durable adds/s, batches of {batch}", "adds/s", values(r, "batched_per_s"), target="≥ 20,000/s",
            check=("value", ">=", 20000), not_run=why),
        row(f"job.list of {n + 1:,} jobs, request to last byte", "ms", values(r, "list_rpc_ms"), target="< 200 ms",
            check=("value", "<", 200), not_run=why),
        row(f"uploadctl --json list of {n + 1:,} jobs, start to exit", "ms", values(r, "list_ctl_ms"),
            target="< 200 ms", check=("value", "<", 200), not_run=why),
    ]}


def journal(b: Bench):
    """A state directory whose journal holds `journal_jobs` queued jobs, made once by adding them."""
    if "journal" not in b.memo:
        jobs, batch = b.size["journal_jobs"], b.size["batch"]
        log(f"  making a journal of {jobs:,} jobs")
        d, _ = queue_daemon(b, "journal-build")
        try:
            with d.rpc() as rpc:
                add_blocker(b, rpc)
                params = add_params(b)
                for first in range(0, jobs - 1, batch):
                    rpc.batch([("job.add", params)] * min(batch, jobs - 1 - first))
        finally:
            d.stop()
        pristine = b.dir / "journal-pristine"
        shutil.copytree(d.state, pristine)
        size = sum(f.stat().st_size for f in pristine.rglob("*") if f.is_file())
        b.memo["journal"] = (pristine, size)
    return b.memo["journal"]


def restarts(b: Bench) -> tuple[dict, dict]:
    """Starts from a copy of the journal, to READY=1; then memory 1 s later, and the time to stop."""
    if "restart" not in b.memo:
        pristine, _ = journal(b)

        def one(i):
            d, ready = queue_daemon(b, "restart", state_from=pristine)
            try:
                hwm_at_ready = measure.status_kib(d.pid, "VmHWM") / 1024
                time.sleep(1.0)
                rss = measure.status_kib(d.pid, "VmRSS") / 1024
                hwm = measure.status_kib(d.pid, "VmHWM") / 1024
            finally:
                stop = d.stop()
            return {"ready_s": ready, "rss_mib": rss, "hwm_mib": hwm, "hwm_at_ready_mib": hwm_at_ready,
                    "stop_s": stop}

        b.memo["restart"] = b.alternate([("uploadd", one)])
    return b.memo["restart"]


def restart(b: Bench) -> dict:
    raw, failed = restarts(b)
    jobs = b.size["journal_jobs"]
    _, size = journal(b)
    r = raw["uploadd"]
    return {"title": f"restart with a journal of {jobs:,} queued jobs ({size / MIB:.1f} MiB)", "raw": raw, "rows": [
        row("spawn to READY=1", "s", values(r, "ready_s"), target="< 1 s", check=("value", "<", 1.0),
            not_run=failed.get("uploadd")),
        row("SIGTERM to exit", "s", values(r, "stop_s"), not_run=failed.get("uploadd")),
    ]}


def memory(b: Bench) -> dict:
    def idle(i):
        with fresh_uploadd(b.dir / "idle", b.registry) as d:
            time.sleep(1.0)
            return {"rss_mib": measure.status_kib(d.pid, "VmRSS") / 1024}

    raw_idle, failed_idle = b.alternate([("uploadd", idle)])
    if "put_big" not in b.memo:
        transfers.put_big(b)
    raw_big, failed_big = b.memo["put_big"]
    raw_huge, failed_huge = transfers.huge_upload(b)
    raw_q, failed_q = restarts(b)
    big, huge, jobs = human_size(b.size["big"]), human_size(b.size["huge"]), b.size["journal_jobs"]
    return {"title": "daemon memory (VmRSS, sampled every 50 ms during uploads)",
            "raw": {"idle": raw_idle, "huge": raw_huge}, "rows": [
        row("idle, 1 s after READY", "MiB", values(raw_idle["uploadd"], "rss_mib"), not_run=failed_idle.get("uploadd")),
        row(f"peak during the {big} PUT of scenario 1", "MiB", values(raw_big["uploadd"], "rss_mib"),
            peer="curl -T (its max RSS)", peer_values=values(raw_big["curl"], "rss_mib"), target="≤ 32 MiB",
            check=("value", "<=", 32), not_run=failed_big.get("uploadd"), peer_not_run=failed_big.get("curl")),
        row(f"peak during a {huge} PUT (fresh daemon)", "MiB", values(raw_huge["uploadd"], "rss_mib"),
            peer=f"uploadd, {big}, same daemon", peer_values=values(raw_huge["uploadd-big"], "rss_mib"),
            target=f"≤ 32 MiB, flat (≤ 1.1× the {big} one)", check=("both", "<=", 32, 1.1),
            not_run=failed_huge.get("uploadd"), peer_not_run=failed_huge.get("uploadd-big")),
        row(f"peak anonymous memory (RssAnon) during the {huge} PUT", "MiB", values(raw_huge["uploadd"], "anon_mib"),
            peer=f"uploadd, {big}, same daemon", peer_values=values(raw_huge["uploadd-big"], "anon_mib"),
            not_run=failed_huge.get("uploadd"), peer_not_run=failed_huge.get("uploadd-big")),
        row(f"{jobs:,} queued jobs, 1 s after READY", "MiB", values(raw_q["uploadd"], "rss_mib"), target="≤ 100 MiB",
            check=("value", "<=", 100), not_run=failed_q.get("uploadd")),
        row(f"{jobs:,} queued jobs, peak (VmHWM) by READY", "MiB", values(raw_q["uploadd"], "hwm_at_ready_mib"),
            not_run=failed_q.get("uploadd")),
    ]}


def idle_cost(b: Bench) -> dict:
    seconds = b.size["idle_seconds"]

    def one(i):
        with fresh_uploadd(b.dir / "idle", b.registry) as d:
            time.sleep(IDLE_SETTLE)  # past start-up: libdispatch ends its spare worker threads after ~5 s
            ticks_before = d.cpu()
            watched = measure.watch_threads(d.pid, seconds)
            ticks_s = d.cpu() - ticks_before
        return {**watched, "cpu_percent": watched["cpu_ns"] / 1e9 / seconds * 100, "cpu_ticks_s": ticks_s,
                "wakeups_per_s": watched["runs"] / seconds}

    # Idle runs are long and not noisy: at most 3 of them.
    raw, failed = b.alternate([("uploadd", one)], runs=min(b.runs, 3))
    r, why = raw["uploadd"], failed.get("uploadd")
    title = f"idle daemon over {seconds} s, from {IDLE_SETTLE:.0f} s after READY (no jobs, no watchdog)"
    return {"title": title, "raw": raw, "rows": [
        row("CPU (schedstat, all threads)", "%", values(r, "cpu_percent"), target="0.0 %",
            check=("value", "<", 0.05), not_run=why),
        row("wakeups (times scheduled, all threads)", "/s", values(r, "wakeups_per_s"), target="none",
            check=("value", "<=", 0.05), not_run=why),
        row("threads started and ended while idle", "", [x["threads_born"] + x["threads_ended"] for x in r],
            target="0", check=("value", "<=", 0), not_run=why),
    ]}


def status_time(b: Bench) -> dict:
    runs = b.size["status_runs"]
    d = Uploadd(b.dir / "status", b.registry, "")
    d.wipe()
    d.start()
    mine = [str(d.uploadctl), "--socket", str(d.socket), "status"]
    peer = ["systemctl", "--version"]

    def hyperfine(i):
        out = b.dir / f"hyperfine-{i}.json"
        measure.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--export-json", str(out),
                     shlex.join(mine), shlex.join(peer)]).check("hyperfine")
        results = json.loads(out.read_text())["results"]
        return {"uploadctl_ms": results[0]["median"] * 1000, "systemctl_ms": results[1]["median"] * 1000}

    def loop(i):
        times = {"uploadctl_ms": [], "systemctl_ms": []}
        for _ in range(runs):
            times["uploadctl_ms"].append(measure.run(mine).check("uploadctl status").wall * 1000)
            times["systemctl_ms"].append(measure.run(peer).wall * 1000)
        return {k: sorted(v)[len(v) // 2] for k, v in times.items()}

    tool = "hyperfine" if shutil.which("hyperfine") else "a loop"
    try:
        raw, failed = b.alternate([("pair", hyperfine if shutil.which("hyperfine") else loop)])
    finally:
        d.stop()
    r = raw["pair"]
    return {"title": f"`uploadctl status` start to exit ({tool}, median of {runs})", "raw": raw, "rows": [
        row("start to exit", "ms", values(r, "uploadctl_ms"), subject="uploadctl status", peer="systemctl --version",
            peer_values=values(r, "systemctl_ms"), target="≤ 20 ms", check=("value", "<=", 20),
            not_run=failed.get("pair"), peer_not_run=failed.get("pair")),
    ]}


def rss_target(queued: int) -> dict:
    """Issue 16: ≤ 100 MiB with 100,000 queued; issue 51: ≤ 400 MiB with 1,000,000."""
    limit = {100_000: 100, 1_000_000: 400}.get(queued)
    return {"target": f"≤ {limit} MiB", "check": ("value", "<=", limit)} if limit else {}


def queue_scaling(b: Bench) -> dict:
    """One queue grown by batched adds to each size in turn (1k, 10k, 100k, 1M in full mode): at
    each, the single add's round trip, then a restart: spawn to READY=1, RSS 1 s later, the peak
    by READY, and a whole job.list. Issue 16 asks that each grow linearly or better."""
    sizes = b.size["queue_sizes"]
    d, _ = queue_daemon(b, "queue-scaling")
    params = add_params(b)
    per_size = []
    try:
        with d.rpc() as rpc:
            add_blocker(b, rpc)
        queued = 1
        for size in sizes:
            log(f"  growing the queue to {size:,} jobs")
            with d.rpc() as rpc:
                while queued < size - 100:
                    step = min(b.size["batch"], size - 100 - queued)
                    rpc.batch([("job.add", params)] * step)
                    queued += step
                latencies = []
                for _ in range(size - queued):  # the last 100 one at a time, each durable
                    start = time.perf_counter()
                    rpc.call("job.add", params)
                    latencies.append(time.perf_counter() - start)
                    queued += 1
            d.stop()
            ready = d.start()
            hwm = measure.status_kib(d.pid, "VmHWM") / 1024
            time.sleep(1.0)
            rss = measure.status_kib(d.pid, "VmRSS") / 1024
            with d.rpc() as rpc:
                # Pages of 10,000 (what uploadctl and the Python client ask for), then the whole list
                # in one answer: the time of each, and what each costs the daemon at its peak.
                measure.reset_peak_rss(d.pid)
                start = time.perf_counter()
                paged, after = 0, None
                while True:
                    page = rpc.call("job.list", {"limit": 10_000} | ({"after": after} if after else {}))
                    paged += len(page["jobs"])
                    if (after := page.get("next")) is None:
                        break
                paged_s = time.perf_counter() - start
                paged_hwm = measure.status_kib(d.pid, "VmHWM") / 1024
                measure.reset_peak_rss(d.pid)
                start = time.perf_counter()
                rpc.send(rpc.request("job.list", {}))
                answer = rpc.read_answer()
                listed = time.perf_counter() - start
                whole_hwm = measure.status_kib(d.pid, "VmHWM") / 1024
            if (count := job_count(answer)) != size or paged != size:
                raise RuntimeError(f"job.list returned {count} jobs, and its pages {paged}, not {size}")
            journal = (d.state / "journal").stat().st_size
            per_size.append({"jobs": size, "add_ms": sorted(latencies)[len(latencies) // 2] * 1000,
                             "ready_s": ready, "rss_mib": rss, "hwm_mib": hwm, "list_s": listed,
                             "list_peak_mib": whole_hwm, "paged_s": paged_s, "paged_peak_mib": paged_hwm,
                             "journal_mib": journal / MIB})
            log(f"  {size:,} jobs: {per_size[-1]}")
    except Exception as error:  # noqa: BLE001 - the sizes measured so far are still reported
        failure = f"{error.__class__.__name__}: {error}"
        log(f"  queue scaling stopped: {failure[:300]}")
    else:
        failure = None
    finally:
        d.stop()
        d.wipe()

    rows = []
    for m in per_size:
        n, big = m["jobs"], m["jobs"] == sizes[-1]
        label = f"{n:,} queued ({m['journal_mib']:.1f} MiB journal)"
        rows.append(row(f"{label}: spawn to READY=1", "s", [m["ready_s"]],
                        target="< 5 s" if n >= 1_000_000 else "",
                        check=("value", "<", 5.0) if n >= 1_000_000 else None))
        rows.append(row(f"{label}: RSS 1 s after READY", "MiB", [m["rss_mib"]], **rss_target(n)))
        rows.append(row(f"{label}: peak RSS (VmHWM) by READY", "MiB", [m["hwm_mib"]]))
        rows.append(row(f"{label}: whole job.list, request to last byte", "s", [m["list_s"]]))
        rows.append(row(f"{label}: job.list in pages of 10,000, first request to last byte", "s", [m["paged_s"]]))
        rows.append(row(f"{label}: peak RSS over the whole job.list", "MiB", [m["list_peak_mib"]]))
        rows.append(row(f"{label}: peak RSS over the paged job.list", "MiB", [m["paged_peak_mib"]],
                        **({"target": "≤ 400 MiB", "check": ("value", "<=", 400)} if n == 1_000_000 else {})))
        rows.append(row(f"{label}: one durable job.add, round trip (median of 100)", "ms", [m["add_ms"]],
                        target="(grows ≤ linearly)" if big else ""))
    # Linear or better: the cost per job at the largest size over the cost per job one size down.
    if len(per_size) >= 2:
        small, large = per_size[-2], per_size[-1]
        scale = large["jobs"] / small["jobs"]
        for key, what in (("ready_s", "READY"), ("rss_mib", "RSS"), ("list_s", "job.list")):
            growth = large[key] / small[key] / scale
            rows.append(row(f"{what} per job, {large['jobs']:,} over {small['jobs']:,} queued", "×", [growth],
                            target="≤ 1.25 (linear)", check=("value", "<=", 1.25)))
    if failure:
        rows.append(row("the next size", "", None, not_run=failure))
    return {"title": "queue size: " + ", ".join(f"{n:,}" for n in sizes) + " queued jobs", "raw": per_size,
            "rows": rows}


def dead_server(b: Bench) -> dict:
    """Every job's server refuses connections: what the retries cost the daemon while they back off."""
    files = b.small_files("small")
    seconds = b.size["dead_seconds"]

    def attempts(d: Uploadd) -> int:
        listed = json.loads(d.ctl("--json", "list", check="uploadctl list").stdout)
        return sum(job["attempts"] for job in listed["jobs"])

    def one(i):
        # Bound and never listening: every connect to it is refused, and no other process can take it.
        refuser = socket.socket()
        refuser.bind(("127.0.0.1", 0))
        try:
            with fresh_uploadd(b.dir / "dead", b.registry) as d:
                d.ctl("add", *map(str, files), "--to", f"http://127.0.0.1:{refuser.getsockname()[1]}/dead/",
                      "--protocol", "put", "--snapshot", "none", check="uploadctl add")
                time.sleep(2)  # past the first attempts of all of them
                tried_before = attempts(d)
                cpu_before = d.cpu()
                time.sleep(seconds)
                cpu = d.cpu() - cpu_before
                tried = attempts(d) - tried_before
        finally:
            refuser.close()
        if tried <= 0:
            raise RuntimeError(f"no attempt in {seconds} s against a server that refuses connections")
        return {"cpu_s": cpu, "attempts_per_s": tried / seconds, "us_per_attempt": cpu / tried * 1e6,
                "cpu_percent": cpu / seconds * 100}

    raw, failed = b.alternate([("uploadd", one)], runs=min(b.runs, 3))
    r, why = raw["uploadd"], failed.get("uploadd")
    title = (f"{len(files):,} jobs to a server that refuses connections, {seconds} s of retries from 2 s after "
             "the add")
    return {"title": title, "raw": raw, "rows": [
        row("daemon CPU per failed attempt", "µs", values(r, "us_per_attempt"), target="≤ 500 µs",
            check=("value", "<=", 500), not_run=why),
        row("failed attempts per second", "/s", values(r, "attempts_per_s"), target="(informative)", not_run=why),
        row("daemon CPU", "%", values(r, "cpu_percent"), target="(informative)", not_run=why),
    ]}

