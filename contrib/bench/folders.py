"""Scenario 17, watched folders (issue 52): files dropped into a `[folder NAME]`, from the first
write to the last upload completed, against `uploadctl add DIR` of the same files; and what the
daemon keeps per file a folder remembers once its jobs are cleared."""

import json
import shutil
import time
from datetime import datetime
from pathlib import Path

import measure
from benchenv import log
from context import Bench, human_size, row, values
from daemon import Uploadd, fresh_uploadd
from longlife import SETTLE as AT_REST

# The rule's quiet time before a file is taken: the default is 2 s, which alone would be most of a
# run of 10,000 small files. Everything else is the daemon's default.
SETTLE = "500ms"
POLL = 0.02  # how often `daemon.status` is asked whether the folder's jobs are done


def write_files(folder: Path, names: list[str], size: int, bench: Bench) -> None:
    """Each file written and closed, one after another, as a program saving into the folder would."""
    for k, name in enumerate(names):
        start = (k * 4099) % (len(bench._random) - size)
        with open(folder / name, "wb") as f:
            f.write(bench._random[start:start + size])


def fresh_folder(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    path.chmod(0o755)  # a folder others may write to is refused (trust_others)
    return path


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def listed_jobs(d: Uploadd) -> list[dict]:
    return json.loads(d.ctl("--json", "list", check="uploadctl --json list").stdout)["jobs"]


def check_jobs(jobs: list[dict], folder: Path, names: list[str], what: str) -> None:
    """Exactly one completed job per file: a file taken twice, or missed, is a bug of the daemon's."""
    sources = [job["source"] for job in jobs]
    expected = {str(folder / name) for name in names}
    twice = sorted({s for s in sources if sources.count(s) > 1}) if len(set(sources)) != len(sources) else []
    missed = sorted(expected - set(sources))
    unknown = sorted(set(sources) - expected)
    not_done = [(job["id"], job["state"], job.get("error")) for job in jobs if job["state"] != "completed"]
    if twice or missed or unknown or not_done:
        raise RuntimeError(f"{what}: {len(jobs)} jobs for {len(names)} files; taken twice: {twice[:5]} "
                           f"({len(twice)}); missed: {missed[:5]} ({len(missed)}); not ours: {unknown[:5]}; "
                           f"not completed: {not_done[:5]} ({len(not_done)})")


def at_rest_kib(d: Uploadd) -> tuple[int, int]:
    """VmRSS and RssAnon once the daemon is at rest: past its heap trims and libdispatch's idle
    threads' end (as scenario 10 measures)."""
    time.sleep(AT_REST)
    return measure.status_kib(d.pid, "VmRSS"), measure.status_kib(d.pid, "RssAnon")


def growth(before: tuple[int, int], after: tuple[int, int], count: int) -> dict:
    """What the daemon kept at rest, per file: VmRSS and its anonymous part (heap, stacks); the
    rest of VmRSS is mapped code and data, touched once by any upload."""
    return {"idle_rss_mib": before[0] / 1024, "cleared_rss_mib": after[0] / 1024,
            "idle_anon_mib": before[1] / 1024, "cleared_anon_mib": after[1] / 1024,
            "bytes_per_file": (after[0] - before[0]) * 1024 / count,
            "anon_bytes_per_file": (after[1] - before[1]) * 1024 / count}


def watched_folder(b: Bench) -> dict:
    """Files dropped into a watched folder (settle = 500ms), against `uploadctl add DIR`."""
    count, size = b.size["folder_count"], b.size["folder_size"]
    names = [f"f{k:05d}.bin" for k in range(count)]
    base = b.nginx + "/dav/bench/"

    def arrived(relative_folder: str) -> None:
        for name in names:
            b.take_dav(f"{relative_folder}/{name}", size)
        left = list((b.shm / "dav" / relative_folder).iterdir())
        if left:
            raise RuntimeError(f"the server holds {len(left)} more files in {relative_folder}: {left[:3]}")

    def add(i):
        folder = fresh_folder(b.shm / f"folder-add-{i}")
        write_files(folder, names, size, b)
        try:
            with fresh_uploadd(b.dir / "folder-add", b.registry) as d:
                idle = at_rest_kib(d)  # from the same rest as the watched daemon's drop
                result = b.uploadd_run([str(folder), "--to", f"{base}add-{i}/", "--protocol", "put"],
                                       wait_separately=True, daemon=d)  # and `clear`s them
                cleared = at_rest_kib(d)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        arrived(f"add-{i}/{folder.name}")
        return {**result, "files_per_s": count / result["wall"], **growth(idle, cleared, count)}

    def watched(i):
        folder = fresh_folder(b.shm / f"folder-watch-{i}")
        config = (f"[folder drop]\npath = {folder}\nto = {base}watch-{i}/\nprotocol = put\n"
                  f"settle = {SETTLE}\n")
        try:
            with fresh_uploadd(b.dir / "folder-watch", b.registry, config) as d:
                idle = at_rest_kib(d)
                with d.rpc() as rpc:
                    status = rpc.call("daemon.status")
                    if status.get("folder_problems") or f"[folder drop] watching {folder}" not in d.log_tail(200):
                        raise RuntimeError(f"the folder is not watched: {status.get('folder_problems')}; "
                                           f"end of {d.log}:\n{d.log_tail()}")
                    cpu = measure.CpuDelta(d.pid)
                    measure.reset_peak_rss(d.pid)
                    first_write = time.time()
                    start = time.perf_counter()
                    write_files(folder, names, size, b)
                    written = time.perf_counter() - start
                    deadline = start + 120 + count / 50
                    while True:
                        jobs = rpc.call("daemon.status")["jobs"]
                        if jobs.get("completed", 0) >= count:
                            break
                        if jobs.get("failed", 0) or jobs.get("canceled", 0):
                            raise RuntimeError(f"the folder's jobs did not all complete: {jobs}")
                        if time.perf_counter() > deadline:
                            raise RuntimeError(f"not done {deadline - start:.0f} s after the first write: {jobs}")
                        time.sleep(POLL)
                    wall = time.perf_counter() - start
                    daemon_cpu = cpu.seconds()
                    hwm_kib = measure.status_kib(d.pid, "VmHWM")
                    done_kib = measure.status_kib(d.pid, "VmRSS")
                jobs = listed_jobs(d)
                check_jobs(jobs, folder, names, "after the drop")
                last_completed = max(parse_time(job["updated_at"]) for job in jobs) - first_write
                first_created = min(parse_time(job["created_at"]) for job in jobs) - first_write
                d.ctl("clear", check="uploadctl clear")
                cleared = at_rest_kib(d)
                # The ledger, not the jobs, now keeps the folder's files from being taken again.
                again = listed_jobs(d)
                if again:
                    raise RuntimeError(f"{len(again)} jobs after `uploadctl clear` and {AT_REST:.0f} s at rest "
                                       f"(a file taken again?), first: {again[:3]}")
                journal = d.state / "journal"
                journal_kib = journal.stat().st_size / 1024 if journal.exists() else None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        arrived(f"watch-{i}")
        log(f"  watched folder run {i}: {wall:.2f} s (writing {written:.2f} s, first job {first_created:.2f} s, "
            f"last completed {last_completed:.2f} s after the first write); VmRSS idle {idle[0] / 1024:.1f} MiB, "
            f"done {done_kib / 1024:.1f}, cleared {cleared[0] / 1024:.1f}")
        return {"wall": wall, "files_per_s": count / wall, "write_s": written, "first_job_s": first_created,
                "last_completed_s": last_completed, "daemon_cpu": daemon_cpu, "cpu": daemon_cpu,
                "done_rss_mib": done_kib / 1024, "hwm_mib": hwm_kib / 1024, **growth(idle, cleared, count),
                "bytes_per_job": (done_kib - idle[0]) * 1024 / count, "journal_kib": journal_kib}

    raw, failed = b.alternate([("add", add), ("uploadd", watched)], warm_bytes=2 * count * size)
    mine = {"not_run": failed.get("uploadd")}
    peer = {"peer": "uploadctl add DIR --protocol put, then wait (default snapshot)",
            "peer_not_run": failed.get("add")}
    title = (f"{count:,} files of {human_size(size)} dropped into a watched folder (settle = {SETTLE}, else the "
             "default settings), PUT to nginx")
    return {"title": title, "raw": raw, "rows": [
        row("files/s, first file written to the folder's last upload completed", "files/s",
            values(raw["uploadd"], "files_per_s"), peer_values=values(raw["add"], "files_per_s"),
            target="(informative)", **peer, **mine),
        row("client CPU (watched: the daemon; add: uploadctl ×2 + daemon)", "s", values(raw["uploadd"], "cpu"),
            peer_values=values(raw["add"], "cpu"), target="(informative)", **peer, **mine),
        row(f"RSS per remembered file: at rest after the uploads and `clear`, minus idle before, ÷ {count:,}", "B",
            values(raw["uploadd"], "bytes_per_file"), peer="the same after `add DIR` (nothing remembered)",
            peer_values=values(raw["add"], "bytes_per_file"), peer_not_run=failed.get("add"),
            target="(informative)", **mine),
        row("the same, RssAnon (heap and stacks) only", "B", values(raw["uploadd"], "anon_bytes_per_file"),
            peer="the same after `add DIR` (nothing remembered)", peer_values=values(raw["add"], "anon_bytes_per_file"),
            peer_not_run=failed.get("add"), target="(informative)", **mine),
        row("RSS at rest: idle with the folder watched, before the drop", "MiB",
            values(raw["uploadd"], "idle_rss_mib"), target="(informative)", **mine),
        row(f"RSS at rest: after the {count:,} uploads and `clear`", "MiB",
            values(raw["uploadd"], "cleared_rss_mib"), target="(informative)", **mine),
    ]}
