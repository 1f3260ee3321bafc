"""A private uploadd for the benchmark (own state, cache, socket and config), started with a
NOTIFY_SOCKET the benchmark listens on, and a tiny JSON-RPC client for its control socket."""

import json
import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import measure
from benchenv import RELEASE

# Variables a daemon must not inherit from whoever runs the benchmark.
SCRUBBED = ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
            "JOURNAL_STREAM", "UPLOADD_SOCKET", "STATE_DIRECTORY", "CACHE_DIRECTORY", "CONFIGURATION_DIRECTORY",
            "CREDENTIALS_DIRECTORY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
            "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION")


class DaemonError(Exception):
    pass


class Uploadd:
    """One uploadd under `home` (state/, cache/, control.sock, uploadd.conf, uploadd.log), run from
    `binaries` (the release build unless told; a probe compares builds). `cache`: the cache folder
    elsewhere than home's, on another file system."""

    def __init__(self, home: Path, registry: measure.Registry, config: str = "", binaries: Path = RELEASE,
                 cache: Path | None = None):
        self.home = home
        self.registry = registry
        self.uploadd = binaries / "uploadd"
        self.uploadctl = binaries / "uploadctl"
        self.state = home / "state"
        self.cache = cache or home / "cache"
        self.socket = home / "control.sock"
        self.config = home / "uploadd.conf"
        self.log = home / "uploadd.log"
        self.proc: subprocess.Popen | None = None
        home.mkdir(parents=True, exist_ok=True)
        # The socket's folder: uploadd refuses one that lets group or others in.
        home.chmod(0o700)
        self.config.write_text(config)
        if len(str(self.socket)) > 100:
            raise DaemonError(f"socket path {self.socket} is too long for a Unix socket; move the repo")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self, timeout: float = 120.0) -> float:
        """Starts the daemon; returns the seconds from spawn to READY=1 on our NOTIFY_SOCKET."""
        name = f"\0uploadd-bench-{os.getpid()}-{time.monotonic_ns()}"
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(name)
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
        env["NOTIFY_SOCKET"] = "@" + name[1:]
        # No desktop notification per batch on the benchmarker's session bus.
        env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/uploadd-bench-no-session-bus"
        try:
            with open(self.log, "ab") as log:
                started = time.perf_counter()
                self.proc = self.registry.add("uploadd", subprocess.Popen(
                    [str(self.uploadd), "--state-dir", str(self.state), "--cache-dir", str(self.cache),
                     "--socket", str(self.socket), "--config", str(self.config)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
            deadline = started + timeout
            while True:
                notify.settimeout(max(0.05, min(0.5, deadline - time.perf_counter())))
                try:
                    message = notify.recv(4096).decode(errors="replace")
                except socket.timeout:
                    message = ""
                if "READY=1" in message.split("\n"):
                    return time.perf_counter() - started
                if self.proc.poll() is not None:
                    raise DaemonError(f"uploadd exited with {self.proc.returncode} before READY=1; "
                                      f"end of {self.log}:\n{self.log_tail()}")
                if time.perf_counter() > deadline:
                    raise DaemonError(f"uploadd sent no READY=1 within {timeout:.0f} s; end of {self.log}:\n"
                                      f"{self.log_tail()}")
        finally:
            notify.close()

    def stop(self) -> float | None:
        """Stops it (SIGTERM); the seconds it took to exit, None when it had to be killed."""
        if self.proc is None:
            return None
        took = self.registry.stop(self.proc, timeout=30.0)
        self.proc = None
        return took

    def wipe(self) -> None:
        shutil.rmtree(self.state, ignore_errors=True)
        shutil.rmtree(self.cache, ignore_errors=True)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def ctl(self, *args: str, check: str | None = None, timeout: float = 3600) -> measure.Ran:
        """Runs `uploadctl --socket ours ARGS...`, measured."""
        ran = measure.run([str(self.uploadctl), "--socket", str(self.socket), *args], timeout=timeout)
        return ran.check(check) if check else ran

    def cpu(self) -> float:
        return measure.cpu_seconds(self.pid)

    def rpc(self) -> "Rpc":
        return Rpc(self.socket)


@contextmanager
def fresh_uploadd(home: Path, registry: measure.Registry, config: str = ""):
    """A daemon under `home` with its state wiped, started; stopped however the block ends."""
    d = Uploadd(home, registry, config)
    d.wipe()
    d.start()
    try:
        yield d
    finally:
        d.stop()


class RpcError(Exception):
    pass


class Rpc:
    """JSON-RPC 2.0 over NDJSON on a Unix stream socket; notifications are skipped."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")
        self.next_id = 1

    def close(self):
        self.reader.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, message) -> None:
        self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def read_answer(self) -> bytes:
        """The next line that is an answer (an object with an id, or a batch array), unparsed."""
        while True:
            line = self.reader.readline()
            if not line:
                raise RpcError("the daemon closed the connection")
            if line.startswith(b"[") or b'"method"' not in line[:200]:
                return line

    def request(self, method: str, params=None) -> dict:
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.next_id += 1
        return message

    def call(self, method: str, params=None):
        self.send(self.request(method, params))
        answer = json.loads(self.read_answer())
        if "error" in answer:
            raise RpcError(f"{method}: {answer['error']}")
        return answer.get("result")

    def batch(self, calls: list[tuple[str, dict]]) -> list:
        self.send([self.request(method, params) for method, params in calls])
        answers = json.loads(self.read_answer())
        if isinstance(answers, dict):  # the whole batch refused
            raise RpcError(f"batch: {answers.get('error')}")
        errors = [a["error"] for a in answers if "error" in a]
        if errors:
            raise RpcError(f"{len(errors)} of {len(calls)} calls failed, first: {errors[0]}")
        return [a.get("result") for a in answers]
