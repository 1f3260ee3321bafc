"""Measuring processes: wall time and CPU of a command, CPU and memory of a running process from
/proc, and the cleanup registry every long-lived process of the benchmark is put in."""

import os
import signal
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
MIB = 1 << 20


@dataclass
class Ran:
    wall: float          # seconds from spawn to exit
    cpu: float           # user + system seconds of the process and the children it waited for
    maxrss_mib: float    # peak resident set of the process (or its largest waited-for child)
    returncode: int
    stdout: str
    stderr: str

    def check(self, what: str) -> "Ran":
        if self.returncode != 0:
            raise RuntimeError(f"{what} exited with {self.returncode}: {(self.stderr or self.stdout).strip()[-800:]}")
        return self


def run(argv: list[str], env: dict | None = None, cwd=None, capture: bool = True, timeout: float = 3600) -> Ran:
    """Runs argv to its end; wall time from just before the spawn to the reap, CPU and peak RSS from wait4."""
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE, env=env, cwd=cwd)
    stdout_data, stderr_data = [], []
    readers = []
    for stream, sink in ((proc.stdout, stdout_data), (proc.stderr, stderr_data)):
        if stream is not None:
            t = threading.Thread(target=lambda s=stream, k=sink: k.append(s.read()), daemon=True)
            t.start()
            readers.append(t)
    timer = threading.Timer(timeout, lambda: _kill(proc.pid))
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        _kill(proc.pid)
        os.waitpid(proc.pid, 0)
        proc.returncode = -9
        raise
    finally:
        timer.cancel()
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join()
    decode = lambda chunks: b"".join(chunks).decode(errors="replace")
    return Ran(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode,
               decode(stdout_data), decode(stderr_data))


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat from field 3 (state) on: index 0 is field 3."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def children_cpu_seconds(pid: int) -> float:
    """User + system seconds of the children `pid` has waited for (cutime + cstime of /proc/PID/stat)."""
    fields = stat_fields(pid)
    return (int(fields[13]) + int(fields[14])) / CLK_TCK


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, all its threads, in seconds (clock-tick resolution)."""
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """On-CPU nanoseconds of each live thread (/proc/PID/task/TID/schedstat)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return found


class CpuDelta:
    """CPU a running process spends from now on: per-thread schedstat (ns) when no thread exited in
    between, else utime+stime from /proc/PID/stat (clock ticks, which count exited threads too)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.ticks = cpu_seconds(pid)
        self.threads = thread_cpu_ns(pid)

    def seconds(self) -> float:
        now = thread_cpu_ns(self.pid)
        ticks = cpu_seconds(self.pid) - self.ticks
        if all(tid in now for tid in self.threads):
            return (sum(now.values()) - sum(self.threads.values())) / 1e9
        return ticks


def group_cpu_seconds(pgid: int) -> float:
    """utime + stime of every live process in a process group (a server and its workers)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = stat_fields(int(entry.name))
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / CLK_TCK


def status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def reset_peak_rss(pid: int) -> None:
    """Resets VmHWM (Linux 4.0+: write 5 to clear_refs); harmless where it is not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass


def task_schedstat(pid: int) -> dict[int, tuple[int, int]]:
    """(on-CPU ns, times scheduled) of each live thread, from /proc/PID/task/TID/schedstat."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            run_ns, _, count = (int(x) for x in (task / "schedstat").read_text().split())
        except (OSError, ValueError):
            continue
        found[int(task.name)] = (run_ns, count)
    return found


def watch_threads(pid: int, seconds: float, every: float = 0.25) -> dict:
    """CPU ns and wakeups (times scheduled) of all threads over `seconds`, polled every `every` s so
    that threads born or ended meanwhile still count (up to their last poll); and that churn itself."""
    first = last = task_schedstat(pid)
    cpu_ns = runs = 0
    born, ended = 0, 0
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(every, left))
        now = task_schedstat(pid)
        for tid, (ns, count) in now.items():
            before_ns, before_count = last.get(tid, (0, 0))
            cpu_ns += ns - before_ns
            runs += count - before_count
        born += len(now.keys() - last.keys())
        ended += len(last.keys() - now.keys())
        last = now
    return {"cpu_ns": cpu_ns, "runs": runs, "threads_at_start": len(first), "threads_at_end": len(last),
            "threads_born": born, "threads_ended": ended}


class RssSampler:
    """Samples VmRSS of a process every `interval` seconds on a thread; `peak_mib` after stop()."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid, self.interval = pid, interval
        self.samples: list[int] = []
        self.anon_samples: list[int] = []
        self.peaks = {"RssAnon": 0, "RssFile": 0, "RssShmem": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.is_set():
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    self.samples.append(int(line.split()[1]))
                elif line.startswith("Rss"):
                    key, value = line.split()[:2]
                    key = key.rstrip(":")
                    if key in self.peaks:
                        self.peaks[key] = max(self.peaks[key], int(value))
                    if key == "RssAnon":
                        self.anon_samples.append(int(value))
            self._stop.wait(self.interval)

    def __enter__(self):
        reset_peak_rss(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        try:
            self.hwm_mib = status_kib(self.pid, "VmHWM") / 1024
        except OSError:
            self.hwm_mib = None
        return False

    @property
    def peak_mib(self) -> float:
        return max(self.samples, default=0) / 1024

    @property
    def peak_anon_mib(self) -> float:
        """Anonymous memory (heap, stacks): what grows if a daemon buffers what it sends."""
        return max(self.anon_samples, default=0) / 1024


class Registry:
    """Every long-lived process the benchmark starts, so that a failure or Ctrl-C stops them all."""

    def __init__(self):
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def add(self, name: str, proc: subprocess.Popen) -> subprocess.Popen:
        self.procs.append((name, proc))
        return proc

    def stop(self, proc: subprocess.Popen, timeout: float = 10.0) -> float | None:
        """SIGTERM, then SIGKILL after `timeout`; returns the seconds it took to exit after SIGTERM."""
        self.procs = [(n, p) for n, p in self.procs if p is not proc]
        if proc.poll() is not None:
            return None
        start = time.perf_counter()
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout)
            return time.perf_counter() - start
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None

    def stop_all(self) -> None:
        for _, proc in reversed(list(self.procs)):
            self.stop(proc, timeout=5.0)


# What the benchmark runs: a process of these whose command line names one of its directories is
# a leftover of it (a shell or `tail -f` reading a log there is not).
OURS = {"uploadd", "uploadctl", "nginx:", "nginx", "weed", "python", "python3", "iperf3", "curl", "rclone", "aws",
        "hyperfine", "dd"}


def leftovers(markers: list[str]) -> list[tuple[int, str]]:
    """Processes (not this one) of the benchmark's programs whose command line names one of our paths."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        cmdline = b" ".join(argv).decode(errors="replace").strip()
        program = os.path.basename(argv[0].decode(errors="replace").split(" ")[0])
        if program in OURS and any(marker in cmdline for marker in markers):
            found.append((int(entry.name), cmdline))
    return found


def summary(values: list[float]) -> dict | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}
