#!/usr/bin/env python3
"""Where the CPU of many small uploads goes: uploadd against `curl -Z --parallel-max 4`, alternated
against one nginx, with each process's CPU per file (curl; the daemon; `uploadctl add` and
`uploadctl wait`; nginx's worker) and, on request, a `perf record -g` or an `strace -f` of the
daemon over uploadd's last round. Scenarios 2 and 12 of `run.py` measure the same runs without
the split; this is what their rows were profiled with.

    python3 contrib/test/servers.py start --dir /dev/shm/ts > /tmp/ts-env
    python3 contrib/bench/probes/small_files.py --env /tmp/ts-env --bin .build/release \\
        --files 20000 --size 4096 --rounds 3 [--snapshot auto] [--cache DIR] [--perf FILE | --strace FILE]
    python3 contrib/test/servers.py stop --dir /dev/shm/ts

`--bin` takes the build to measure (copy one aside to compare two builds: run the probe once per
build, alternately). `--cache` puts the daemon's cache on another file system (the default
snapshot's copies go there; default: tmpfs beside the sources).

Session 21, 2-core bench machine, 20,000 x 4 KiB, `--snapshot none`, release build of 2c0b532:
curl 97 us of CPU a file, nginx 73 us under it (170 us a file for the run); the daemon 118 us (its
HTTP thread ~98 us), `uploadctl add` 9 us, `uploadctl wait` 10 us, nginx 59 us (196 us): 0.83x
curl's files/s. 2,000 x 64 KiB with the default snapshot: 0.75x with the cache on tmpfs, 0.65x
with it on the disk. Read in the bench README, "What bounds the small-file rows".
"""

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def nginx_worker(env: dict) -> int | None:
    """The worker of the nginx that `servers.py` started for UPLOADD_TEST_NGINX_ROOT, if one is found."""
    prefix = str(Path(env["UPLOADD_TEST_NGINX_ROOT"]).parent) + "/"
    masters = subprocess.run(["pgrep", "-f", f"nginx: master process .* -p {prefix} "], capture_output=True, text=True)
    for master in masters.stdout.split():
        workers = subprocess.run(["pgrep", "-P", master], capture_output=True, text=True).stdout.split()
        if workers:
            return int(workers[0])
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", required=True, help="the variables servers.py printed (KEY=VALUE lines)")
    parser.add_argument("--bin", default=".build/release", help="the folder with uploadd and uploadctl")
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--snapshot", default="none", choices=["none", "auto", "copy"])
    parser.add_argument("--cache", help="the daemon's cache folder (default: on tmpfs)")
    profile = parser.add_mutually_exclusive_group()
    profile.add_argument("--perf", help="perf record -g of the daemon over uploadd's last round, into this file")
    profile.add_argument("--strace", help="strace -f of the daemon over uploadd's last round, into this file")
    args = parser.parse_args()

    env = dict(line.strip().split("=", 1) for line in Path(args.env).read_text().splitlines() if "=" in line)
    url = env["UPLOADD_TEST_NGINX_URL"] + "/dav/"
    dav = Path(env["UPLOADD_TEST_NGINX_ROOT"]) / "dav"
    binaries = Path(args.bin).resolve()
    worker = nginx_worker(env)
    home = Path(tempfile.mkdtemp(prefix="uploadd-small-files-", dir="/dev/shm"))
    home.chmod(0o700)
    tag = f"probe-{os.getpid()}"
    daemon = None
    try:
        sources = home / "src"
        sources.mkdir()
        files = []
        for index in range(args.files):
            path = sources / f"f{index:06d}.bin"
            path.write_bytes(os.urandom(args.size))
            files.append(str(path))
        (home / "uploadd.conf").write_text("")
        control = home / "control.sock"
        daemon_env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
        daemon_env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/uploadd-probe"
        daemon = subprocess.Popen(
            [str(binaries / "uploadd"), "--state-dir", str(home / "state"), "--cache-dir", args.cache or str(home / "cache"),
             "--socket", str(control), "--config", str(home / "uploadd.conf")],
            stdout=open(home / "uploadd.log", "w"), stderr=subprocess.STDOUT, env=daemon_env, start_new_session=True)
        deadline = time.monotonic() + 30
        while not control.exists():
            if daemon.poll() is not None or time.monotonic() > deadline:
                print(f"uploadd did not start; its log: {home / 'uploadd.log'}", file=sys.stderr)
                return 1
            time.sleep(0.05)
        ctl = [str(binaries / "uploadctl"), "--socket", str(control)]
        nginx_cpu = (lambda: cpu_seconds(worker)) if worker else (lambda: 0.0)

        def curl(round_: int) -> dict:
            listing = home / "curl-list"
            with open(listing, "w") as out:
                for f in files:
                    out.write(f'upload-file = "{f}"\nurl = "{url}{tag}-curl-{round_}/{Path(f).name}"\noutput = "/dev/null"\n')
            client, server, started = children_cpu(), nginx_cpu(), time.perf_counter()
            # Its parallel progress meter shows even with -s: kept out of the probe's output.
            ran = subprocess.run(["curl", "-sS", "-Z", "--parallel-max", "4", "--fail", "-K", str(listing)],
                                 capture_output=True, text=True)
            if ran.returncode != 0:
                raise RuntimeError(f"curl -Z failed ({ran.returncode}): {ran.stderr[-2000:]}")
            return {"wall": time.perf_counter() - started, "client": children_cpu() - client, "nginx": nginx_cpu() - server}

        def uploadd(round_: int) -> dict:
            profiler = None
            if round_ == args.rounds - 1 and (args.perf or args.strace):
                command = (["perf", "record", "-F", "2000", "-g", "-o", args.perf] if args.perf
                           else ["strace", "-f", "-tt", "-o", args.strace])
                profiler = subprocess.Popen(command + ["-p", str(daemon.pid)], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
                time.sleep(1)
            client, own, server, started = children_cpu(), cpu_seconds(daemon.pid), nginx_cpu(), time.perf_counter()
            added = subprocess.run(ctl + ["add", *files, "--to", f"{url}{tag}-uploadd-{round_}/", "--protocol", "put",
                                          "--snapshot", args.snapshot], check=True, capture_output=True, text=True)
            after_add = children_cpu()
            subprocess.run(ctl + ["wait", *added.stdout.split()], check=True, capture_output=True)
            result = {"wall": time.perf_counter() - started, "add": after_add - client, "wait": children_cpu() - after_add,
                      "daemon": cpu_seconds(daemon.pid) - own, "nginx": nginx_cpu() - server}
            if profiler:
                profiler.send_signal(signal.SIGINT)
                profiler.wait()
            subprocess.run(ctl + ["clear"], check=True, capture_output=True)
            return result

        def per_file(seconds: float) -> str:
            return f"{seconds * 1e6 / args.files:6.1f} us"

        results = {"curl": [], "uploadd": []}
        for round_ in range(args.rounds):
            for name, run in (("curl", curl), ("uploadd", uploadd)):
                subprocess.run(["sync"])
                measured = run(round_)
                results[name].append(measured)
                split = (f"client {per_file(measured['client'])}" if name == "curl" else
                         f"daemon {per_file(measured['daemon'])}, add {per_file(measured['add'])}, "
                         f"wait {per_file(measured['wait'])}")
                print(f"{name:8} round {round_}: {args.files / measured['wall']:7.0f} files/s; per file: {split}, "
                      f"nginx {per_file(measured['nginx'])}", flush=True)
        curl_rate = statistics.median(args.files / r["wall"] for r in results["curl"])
        uploadd_rate = statistics.median(args.files / r["wall"] for r in results["uploadd"])
        curl_cpu = statistics.median(r["client"] for r in results["curl"])
        uploadd_cpu = statistics.median(r["daemon"] + r["add"] + r["wait"] for r in results["uploadd"])
        print(f"median files/s: curl {curl_rate:.0f}, uploadd {uploadd_rate:.0f} ({uploadd_rate / curl_rate:.2f}x); "
              f"client CPU {uploadd_cpu / curl_cpu:.2f}x curl's")
        return 0
    finally:
        if daemon and daemon.poll() is None:
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
        for uploaded in dav.glob(f"{tag}-*"):
            shutil.rmtree(uploaded, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
