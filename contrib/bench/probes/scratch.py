"""What the probes share: the WebDAV folder of the test servers' nginx (`servers.py start` printed
its variables), a scratch folder on tmpfs with random source files, and the cleanup of both: every
process the probe started, every file it uploaded."""

import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import measure  # noqa: E402  (the benchmark's own modules, beside this folder)


class Scratch:
    """Use as `with Scratch(args.env, "name") as scratch:`; uploads go under `scratch.url + scratch.tag`."""

    def __init__(self, env_file: str, name: str):
        self.env = dict(line.strip().split("=", 1) for line in Path(env_file).read_text().splitlines() if "=" in line)
        self.url = self.env["UPLOADD_TEST_NGINX_URL"] + "/dav/"
        self.dav = Path(self.env["UPLOADD_TEST_NGINX_ROOT"]) / "dav"
        self.tag = f"{name}-{os.getpid()}"
        self.registry = measure.Registry()
        self.home = Path(tempfile.mkdtemp(prefix=f"uploadd-{name}-", dir="/dev/shm"))
        self.sources = self.home / "src"
        self.sources.mkdir()

    def files(self, count: int, size: int, prefix: str = "f") -> list[str]:
        """`count` new files of `size` random bytes; their paths."""
        made = []
        for index in range(count):
            path = self.sources / f"{prefix}{index:06d}.bin"
            path.write_bytes(os.urandom(size))
            made.append(str(path))
        return made

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(self, *_) -> None:
        self.registry.stop_all()
        for uploaded in self.dav.glob(f"{self.tag}-*"):
            shutil.rmtree(uploaded, ignore_errors=True)
        shutil.rmtree(self.home, ignore_errors=True)
