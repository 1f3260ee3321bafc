"""What the benchmark needs on the machine: Debian packages, the peers' virtual environment, a
release build of uploadd, and a description of the machine for the results."""

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH_VENV = REPO / ".build" / "bench-venv"
SERVERS_VENV = REPO / ".build" / "venv"
REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"
RELEASE = REPO / ".build" / "release"

# Debian packages: the test servers' (nginx with WebDAV, python3-venv), the peers' (libvips-tools:
# vipsthumbnail and the photos; imagemagick: mogrify), and optional tools.
REQUIRED_DEBS = ["nginx", "libnginx-mod-http-dav-ext", "python3", "python3-venv", "curl", "rclone", "iperf3",
                 "coreutils", "procps", "libvips-tools", "imagemagick"]
OPTIONAL_DEBS = ["hyperfine"]


class SetupError(Exception):
    pass


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def installed(package: str) -> bool:
    answer = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return answer.returncode == 0 and "ok installed" in answer.stdout


def apt_install(packages: list[str], required: bool) -> None:
    missing = [p for p in packages if not installed(p)]
    if not missing:
        return
    if not shutil.which("apt-get"):
        if required:
            raise SetupError(f"missing Debian packages {', '.join(missing)} and no apt-get to install them")
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    log(f"installing {' '.join(missing)} (apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # nginx's and iperf3's packages would start system services; policy-rc.d keeps them from starting.
    policy = Path("/usr/sbin/policy-rc.d")
    made_policy = False
    try:
        if not policy.exists():
            subprocess.run(sudo + ["sh", "-c", f"printf '#!/bin/sh\\nexit 101\\n' > {policy} && chmod +x {policy}"],
                           check=True)
            made_policy = True
        subprocess.run(sudo + ["apt-get", "update", "-qq"], env=env, check=False)
        result = subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
                                env=env, capture_output=True, text=True)
        if result.returncode != 0 and required:
            raise SetupError(f"apt-get install {' '.join(missing)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    finally:
        if made_policy:
            subprocess.run(sudo + ["rm", "-f", str(policy)], check=False)


def ensure_bench_venv() -> Path:
    """<repo>/.build/bench-venv with the pinned peers (tuspy, awscli); skipped while its stamp matches."""
    python = BENCH_VENV / "bin" / "python"
    base = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    stamp = hashlib.sha256(REQUIREMENTS.read_bytes() + b"\0" + base.encode()).hexdigest() + "\n"
    stamp_file = BENCH_VENV / ".bench-requirements.sha256"
    if python.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        return BENCH_VENV
    if not python.exists():
        log(f"creating {BENCH_VENV}")
        made = subprocess.run([base, "-m", "venv", "--clear", str(BENCH_VENV)], capture_output=True, text=True)
        if made.returncode != 0:
            shutil.rmtree(BENCH_VENV, ignore_errors=True)
            raise SetupError(f"`{base} -m venv` failed (Debian: python3-venv):\n{made.stdout}{made.stderr}")
    stamp_file.unlink(missing_ok=True)
    log(f"installing {REQUIREMENTS.relative_to(REPO)} into {BENCH_VENV}")
    pip = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet",
                          "-r", str(REQUIREMENTS)], capture_output=True, text=True,
                         env={**os.environ, "PIP_REQUIRE_VIRTUALENV": "1"})
    if pip.returncode != 0:
        raise SetupError(f"pip could not install the peers into {BENCH_VENV}:\n{(pip.stdout + pip.stderr)[-3000:]}")
    stamp_file.write_text(stamp)
    return BENCH_VENV


def build_release() -> None:
    log("make release")  # the same build `make install` installs
    result = subprocess.run(["make", "release"], cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        raise SetupError(f"make release failed:\n{(result.stdout + result.stderr)[-4000:]}")


def setup(build: bool) -> None:
    apt_install(REQUIRED_DEBS, required=True)
    apt_install(OPTIONAL_DEBS, required=False)
    ensure_bench_venv()
    if build:
        build_release()
    for binary in ("uploadd", "uploadctl", "uploadd-image"):
        if not (RELEASE / binary).exists():
            raise SetupError(f"no {RELEASE / binary}: run without --no-build")
    if links_swift_runtime(RELEASE / "uploadd"):
        raise SetupError(f"{RELEASE / 'uploadd'} loads the Swift runtime as shared libraries (a plain `swift build "
                         "-c release`), not the build `make release` makes and installs: its RSS reads ~6 MiB "
                         "higher and its start slower. Run `make release` first, or run without --no-build")


def links_swift_runtime(binary: Path) -> bool:
    """Whether `binary` needs libswiftCore.so (False when readelf is not there to tell)."""
    if not shutil.which("readelf"):
        return False
    result = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True)
    return "libswiftCore.so" in result.stdout


def first_line(argv: list[str], stream: str = "stdout", pattern: str | None = None) -> str:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unavailable ({error.__class__.__name__})"
    text = (result.stdout + "\n" + result.stderr) if stream == "both" else getattr(result, stream)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if pattern:
        lines = [line for line in lines if re.search(pattern, line)] or lines
    return lines[0] if lines else "unavailable"


def describe_machine() -> dict:
    """The machine and every tool's version, for the results' header."""
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    meminfo = Path("/proc/meminfo").read_text()
    mem_kib = int(re.search(r"^MemTotal:\s+(\d+)", meminfo, re.M)[1])
    bench_python = str(BENCH_VENV / "bin" / "python")
    load = os.getloadavg()
    return {
        "nproc": os.cpu_count(),
        "cpu": model[1] if model else platform.processor(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "os": first_line(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
        "load_average_at_start": [round(x, 2) for x in load],
        "versions": {
            "uploadd": first_line([str(RELEASE / "uploadd"), "--version"]),
            "swift": first_line(["swift", "--version"], "both", r"Swift version"),
            "curl": " ".join(first_line(["curl", "--version"]).split()[:4]),
            "rclone": first_line(["rclone", "version"]),
            "aws": first_line([str(BENCH_VENV / "bin" / "aws"), "--version"], "both"),
            "tuspy": first_line([bench_python, "-c", "import importlib.metadata as m; print(m.version('tuspy'))"]),
            "tuspyserver": first_line([str(SERVERS_VENV / "bin" / "python"), "-c",
                                       "import importlib.metadata as m; print(m.version('tuspyserver'))"]),
            "nginx": first_line(["nginx", "-v"], "both"),
            "weed": first_line([str(SERVERS_VENV / "bin" / "weed"), "version"], "both", r"version"),
            "iperf3": first_line(["iperf3", "--version"]),
            "hyperfine": first_line(["hyperfine", "--version"]) if shutil.which("hyperfine") else "not installed",
            "systemctl": first_line(["systemctl", "--version"]),
            "python": platform.python_version(),
        },
    }
