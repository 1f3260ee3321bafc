"""The benchmark's shared state: sizes, directories, the servers, the transfer daemon, and the
alternating runner every scenario uses."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import measure
from benchenv import REPO, log
from daemon import Uploadd

MIB, GIB = 1 << 20, 1 << 30
SERVERS_PY = REPO / "contrib" / "test" / "servers.py"

FULL = {"big": GIB, "small_count": 2000, "small_size": 64 << 10, "tus_size": 256 * MIB, "tus_chunk": 8 * MIB,
        "s3_size": GIB, "s3_chunk": 8 * MIB, "adds": 10_000, "batch": 500, "journal_jobs": 100_000,
        "huge": 4 * GIB, "idle_seconds": 60, "status_runs": 50, "iperf_seconds": 5,
        "life_rounds": 20, "life_jobs": 3000, "life_queue": 100_000, "photos": 100,
        "tiny_count": 20_000, "tiny_size": 4 << 10, "queue_sizes": [1000, 10_000, 100_000, 1_000_000],
        "dead_seconds": 20, "far_size": 16 * MIB, "far_delay": 0.025, "limit_rate_mib": 8, "limit_size": 24 * MIB,
        "folder_count": 10_000, "folder_size": 4 << 10}
QUICK = {"big": 8 * MIB, "small_count": 50, "small_size": 64 << 10, "tus_size": 8 * MIB, "tus_chunk": 2 * MIB,
         "s3_size": 16 * MIB, "s3_chunk": 8 * MIB, "adds": 1000, "batch": 500, "journal_jobs": 5000,
         "huge": 32 * MIB, "idle_seconds": 5, "status_runs": 10, "iperf_seconds": 1,
         "life_rounds": 3, "life_jobs": 300, "life_queue": 3000, "photos": 4,
         "tiny_count": 200, "tiny_size": 4 << 10, "queue_sizes": [100, 1000], "dead_seconds": 3,
         "far_size": 1 * MIB, "far_delay": 0.025, "limit_rate_mib": 2, "limit_size": 1 * MIB,
         "folder_count": 200, "folder_size": 4 << 10}


def human_size(n: int) -> str:
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def row(metric: str, unit: str, values: list | None, subject: str = "uploadd", peer: str | None = None,
        peer_values: list | None = None, target: str = "", check: tuple | None = None, not_run: str | None = None,
        peer_not_run: str | None = None) -> dict:
    """One line of the table. check: ("ratio", op, x) against the peer, or ("value", op, x) on its own."""
    return {"metric": metric, "unit": unit, "subject": subject, "values": values, "peer": peer,
            "peer_values": peer_values, "target": target, "check": check, "not_run": not_run,
            "peer_not_run": peer_not_run}


class Bench:
    def __init__(self, args, registry: measure.Registry):
        self.args = args
        self.size = dict(QUICK if args.quick else FULL)
        self.runs = args.runs
        self.registry = registry
        self.dir = REPO / ".build" / "bench"
        self.servers_dir = REPO / ".build" / "bench-servers"
        self.shm = Path(f"/dev/shm/uploadd-bench-{os.getpid()}")
        self.env: dict[str, str] = {}
        self.memo: dict = {}
        self._transfer: Uploadd | None = None
        self._random = os.urandom(16 * MIB)

    # Markers that identify a leftover process of ours by its command line.
    @property
    def markers(self) -> list[str]:
        return [str(self.dir) + "/", str(self.servers_dir) + "/", str(self.shm)]

    def prepare(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.shm.mkdir(parents=True)

    # ---- servers -------------------------------------------------------------------------
    def start_servers(self) -> None:
        log("starting nginx, tuspyserver, SeaweedFS (contrib/test/servers.py)")
        result = subprocess.run([sys.executable, str(SERVERS_PY), "start", "--dir", str(self.servers_dir)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"servers.py start failed:\n{result.stderr[-3000:]}")
        for line in result.stdout.splitlines():
            key, _, value = line.partition("=")
            self.env[key] = value
        # Uploads to nginx land on tmpfs: /dav/bench/ and the request-body temp files (renamed into
        # place) both point into /dev/shm, so the disk of a shared machine is not what is measured.
        (self.shm / "dav").mkdir()
        for name in ("nginx", "nginx-tls"):
            nginx = self.servers_dir / name
            (self.shm / f"body-{name}").mkdir()
            (nginx / "www" / "dav" / "bench").symlink_to(self.shm / "dav")
            body = nginx / "temp" / "body"
            if body.is_dir() and not body.is_symlink():
                shutil.rmtree(body)
            body.symlink_to(self.shm / f"body-{name}")

    def stop_servers(self) -> None:
        subprocess.run([sys.executable, str(SERVERS_PY), "stop", "--dir", str(self.servers_dir)],
                       capture_output=True, text=True)
        # The data the servers kept (uploads, SeaweedFS volumes) is large and of no further use.
        for name in ("seaweed", "tus", "nginx/www"):
            shutil.rmtree(self.servers_dir / name, ignore_errors=True)

    def server_pgid(self, name: str) -> int:
        return int((self.servers_dir / "pids" / f"{name}.pid").read_text().split()[0])

    @property
    def nginx(self) -> str:
        return self.env["UPLOADD_TEST_NGINX_URL"]

    @property
    def tls_h2(self) -> str:
        """The TLS nginx that offers HTTP/2 (its certificate is from UPLOADD_TEST_TLS_CA)."""
        return self.env["UPLOADD_TEST_TLS_H2_URL"]

    def take_dav(self, relative: str, size: int) -> None:
        """Checks that /dav/bench/RELATIVE arrived whole, then removes it."""
        path = self.shm / "dav" / relative
        got = path.stat().st_size if path.exists() else None
        if got != size:
            raise RuntimeError(f"the server holds {got} bytes of {relative}, not {size}")
        path.unlink()

    def clear_dav(self) -> None:
        for entry in (self.shm / "dav").iterdir():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()

    # ---- files ---------------------------------------------------------------------------
    def file(self, name: str, size: int) -> Path:
        """A file of `size` random-looking bytes on tmpfs, made once."""
        path = self.shm / "src" / name
        if path.exists() and path.stat().st_size == size:
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            written = 0
            while written < size:
                block = self._random[(written // MIB) % 7 * 4096:][: min(8 * MIB, size - written)]
                f.write(block)
                written += len(block)
        return path

    def drop_file(self, name: str) -> None:
        (self.shm / "src" / name).unlink(missing_ok=True)

    def small_files(self, kind: str = "small") -> list[Path]:
        """`small_count` files of `small_size` bytes (kind "small"), or `tiny_count` of `tiny_size`."""
        count, size = self.size[f"{kind}_count"], self.size[f"{kind}_size"]
        folder = self.shm / "src" / kind
        if not folder.exists():
            folder.mkdir(parents=True)
            for i in range(count):
                start = (i * 4099) % (len(self._random) - size)
                (folder / f"f{i:05d}.bin").write_bytes(self._random[start:start + size])
        return sorted(folder.iterdir())

    # ---- the transfer daemon -------------------------------------------------------------
    def transfer_daemon(self) -> Uploadd:
        """The uploadd that scenarios 1-4 and 7 upload with: default settings (issue 16 measures
        those: `transfers` unset, so small files run wider), and an s3 remote `benchs3`."""
        if self._transfer is None:
            secret = self.dir / "s3.secret"
            secret.write_text(self.env["UPLOADD_TEST_S3_SECRET_KEY"] + "\n")
            secret.chmod(0o600)
            config = (f"[remote benchs3]\nprotocol = s3\n"
                      f"url = s3://{self.env['UPLOADD_TEST_S3_BUCKET']}/bench/\n"
                      f"endpoint = {self.env['UPLOADD_TEST_S3_ENDPOINT']}\n"
                      f"region = {self.env['UPLOADD_TEST_S3_REGION']}\n"
                      f"access_key_id = {self.env['UPLOADD_TEST_S3_ACCESS_KEY']}\n"
                      f"secret_access_key_file = {secret}\n")
            daemon = Uploadd(self.dir / "transfer", self.registry, config)
            daemon.start()
            self._transfer = daemon
        return self._transfer

    def uploadd_run(self, add_args: list[str], wait_separately: bool = False, daemon: Uploadd | None = None) -> dict:
        """`uploadctl add ... --wait` (or add, then wait): wall time, CPU of uploadctl and the daemon,
        the daemon's RSS sampled every 50 ms. On the transfer daemon unless another is given."""
        d = daemon or self.transfer_daemon()
        cpu = measure.CpuDelta(d.pid)
        with measure.RssSampler(d.pid) as rss:
            if wait_separately:
                added = d.ctl("add", *add_args, check="uploadctl add")
                ids = added.stdout.split()
                waited = d.ctl("wait", *ids, check="uploadctl wait")
                wall, ctl_cpu = added.wall + waited.wall, added.cpu + waited.cpu
                split = {"add_wall": added.wall, "wait_wall": waited.wall}
            else:
                ran = d.ctl("add", *add_args, "--wait", check="uploadctl add --wait")
                wall, ctl_cpu, split = ran.wall, ran.cpu, {}
        daemon_cpu = cpu.seconds()
        d.ctl("clear", check="uploadctl clear")
        return {"wall": wall, "cpu": ctl_cpu + daemon_cpu, "ctl_cpu": ctl_cpu, "daemon_cpu": daemon_cpu,
                "rss_mib": rss.peak_mib, "anon_mib": rss.peak_anon_mib, "hwm_mib": rss.hwm_mib,
                "rss_peaks_kib": rss.peaks, **split}

    def stop_daemons(self) -> None:
        if self._transfer:
            self._transfer.stop()
            self._transfer = None

    # ---- alternating runs ----------------------------------------------------------------
    def alternate(self, contenders: list[tuple], runs: int | None = None,
                  warm_bytes: int = 0) -> tuple[dict, dict]:
        """Runs each contender once per round, in order, for `runs` rounds (peer, uploadd, peer, ...).
        A contender is (name, fn) or (name, fn, at_most_runs). One that fails is dropped with its
        reason; the others go on. `warm_bytes`: memory warmed before each run (`warm_memory`)."""
        raw = {c[0]: [] for c in contenders}
        failed: dict[str, str] = {}
        for i in range(runs or self.runs):
            for name, fn, *limit in contenders:
                if name in failed or (limit and i >= limit[0]):
                    continue
                if warm_bytes:
                    self.warm_memory(warm_bytes)
                try:
                    raw[name].append(fn(i))
                except Exception as error:  # noqa: BLE001 - any failure of a contender is its result
                    failed[name] = f"{error.__class__.__name__}: {error}".strip()
                    log(f"  {name}: not run: {failed[name][:300]}")
        return raw, failed

    def warm_memory(self, size: int) -> None:
        """Gives `size` bytes of pages the machine has backed just now back to the free lists, so
        the next contender starts on warm memory. On a VM that reports free pages to its host
        (Firecracker here: page_reporting), a page backed afresh costs ~10x one freed moments
        before, and a contender that needs new pages (a copy, the server's file) got warm or cold
        ones by what the contender before it had freed (README, "Targets missed")."""
        path = self.shm / "warm-pages"
        with open(path, "wb") as f:
            block = bytes(8 * MIB)
            for _ in range(max(size // len(block), 1)):
                f.write(block)
        path.unlink()


def values(runs: list[dict], key: str) -> list:
    return [r[key] for r in runs if r.get(key) is not None]
