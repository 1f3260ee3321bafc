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
snapshot's copies go there; default: tmpfs beside the sources): give it a new folder, which the
daemon makes and keeps.

Session 21, 2-core bench machine, 20,000 x 4 KiB, `--snapshot none`, release build of 2c0b532:
curl 97 us of CPU a file, nginx 73 us under it (170 us a file for the run); the daemon 118 us (its
HTTP thread ~98 us), `uploadctl add` 9 us, `uploadctl wait` 10 us, nginx 59 us (196 us): 0.83x
curl's files/s. 2,000 x 64 KiB with the default snapshot: 0.75x with the cache on tmpfs, 0.65x
with it on the disk. Read in the bench README, "What bounds the small-file rows".
"""

import argparse
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import measure  # noqa: E402  (the benchmark's own modules, beside this folder)
from daemon import Uploadd  # noqa: E402
from scratch import Scratch  # noqa: E402  (beside this file)


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
    parser.add_argument("--cache", help="a new folder for the daemon's cache (default: on tmpfs)")
    profile = parser.add_mutually_exclusive_group()
    profile.add_argument("--perf", help="perf record -g of the daemon over uploadd's last round, into this file")
    profile.add_argument("--strace", help="strace -f of the daemon over uploadd's last round, into this file")
    args = parser.parse_args()

    with Scratch(args.env, "small-files") as scratch:
        url, home, tag, registry = scratch.url, scratch.home, scratch.tag, scratch.registry
        worker = nginx_worker(scratch.env)
        nginx_cpu = (lambda: measure.cpu_seconds(worker)) if worker else (lambda: 0.0)
        files = scratch.files(args.files, args.size)
        daemon = Uploadd(home / "daemon", registry, binaries=Path(args.bin).resolve(),
                         cache=Path(args.cache) if args.cache else None)
        daemon.start()

        def curl(round_: int) -> dict:
            listing = home / "curl-list"
            with open(listing, "w") as out:
                for f in files:
                    out.write(f'upload-file = "{f}"\nurl = "{url}{tag}-curl-{round_}/{Path(f).name}"\noutput = "/dev/null"\n')
            server = nginx_cpu()
            # Its parallel progress meter shows even with -s: kept out of the probe's output.
            ran = measure.run(["curl", "-sS", "-Z", "--parallel-max", "4", "--fail", "-K", str(listing)]).check("curl -Z")
            return {"wall": ran.wall, "client": ran.cpu, "nginx": nginx_cpu() - server}

        def uploadd(round_: int) -> dict:
            profiler = None
            if round_ == args.rounds - 1 and (args.perf or args.strace):
                command = (["perf", "record", "-F", "2000", "-g", "-o", args.perf] if args.perf
                           else ["strace", "-f", "-tt", "-o", args.strace])
                profiler = registry.add("profiler", subprocess.Popen(
                    command + ["-p", str(daemon.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                time.sleep(1)
            own, server = measure.cpu_seconds(daemon.pid), nginx_cpu()
            added = daemon.ctl("add", *files, "--to", f"{url}{tag}-uploadd-{round_}/", "--protocol", "put",
                               "--snapshot", args.snapshot, check="uploadctl add")
            waited = daemon.ctl("wait", *added.stdout.split(), check="uploadctl wait")
            result = {"wall": added.wall + waited.wall, "add": added.cpu, "wait": waited.cpu,
                      "daemon": measure.cpu_seconds(daemon.pid) - own, "nginx": nginx_cpu() - server}
            if profiler:
                profiler.send_signal(signal.SIGINT)
                profiler.wait()
            daemon.ctl("clear", check="uploadctl clear")
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


if __name__ == "__main__":
    sys.exit(main())
