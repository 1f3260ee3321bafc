#!/usr/bin/env python3
"""The instructions the daemon executes per small file, counted by callgrind: a figure that does
not move with the machine's load, where the CPU time of `small_files.py` moves by 10-20% between
rounds of the same build on a shared 2-core machine. Give two builds to see which functions grew.

    python3 contrib/test/servers.py start --dir /dev/shm/ts > /tmp/ts-env
    python3 contrib/bench/probes/instructions.py --env /tmp/ts-env --bin OLD/.build/release \\
        --bin .build/release [--files 2000] [--top 25]
    python3 contrib/test/servers.py stop --dir /dev/shm/ts

Each build's daemon runs under `valgrind --tool=callgrind` (apt-get install valgrind): 300 files
first (connections, caches), then the counters are zeroed and `--files` PUTs of 4 KiB are added
with `--snapshot none` and waited for. Counted is the daemon alone, user space alone: what the
kernel does for it (path walks, page faults, wakeups) is not, so pair this with `small_files.py`
or `perf`. Deterministic to about 0.5% (the threads' interleaving moves the batch sizes).

Each function's own instructions are found from the instruction addresses callgrind records
(`--dump-instr=yes`) and the binary's symbol table (`nm`), not from callgrind's own attribution,
which gives whole threads to one closure where Swift tail-calls. Valgrind 3.19 cannot read the
DWARF of a static Swift build, so a copy stripped of its debug information is run.

Session 22, 2-core bench machine, 2,000 files, each run followed by a `clear`: 38b20b7 (the bench
baseline then) 730 million instructions, 9c463f8 812 million (+11%: the CPU regression `--strict`
found), 5c607ad 742 million. This probe as it is (no `clear`): 38b20b7 707 million (353,526 a
file), 5c607ad 729 million (364,413).
"""

import argparse
import bisect
import collections
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import measure  # noqa: E402  (the benchmark's own modules, beside this folder)
from daemon import Uploadd  # noqa: E402
from scratch import Scratch  # noqa: E402  (beside this file)


def runnable_copy(build: Path, into: Path, dump: Path) -> Path:
    """A folder with the build's uploadctl, and an `uploadd` that runs a debug-stripped copy under callgrind."""
    into.mkdir()
    shutil.copy2(build / "uploadctl", into / "uploadctl")
    shutil.copy2(build / "uploadd", into / "uploadd.real")
    subprocess.run(["strip", "--strip-debug", str(into / "uploadd.real")], check=True)
    wrapper = into / "uploadd"
    wrapper.write_text(f'#!/bin/sh\nexec valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file={dump}.%p '
                       f'"{into / "uploadd.real"}" "$@"\n')
    wrapper.chmod(0o755)
    return into / "uploadd.real"


def self_costs(dump: Path, binary: Path) -> collections.Counter:
    """Instructions per function of `binary` (by address and `nm`), and per library function elsewhere."""
    symbols = []
    listing = subprocess.run(["nm", "-n", "--defined-only", str(binary)], capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            symbols.append((int(parts[0], 16), parts[2]))
    starts = [address for address, _ in symbols]
    names: dict[tuple[str, str], str] = {}

    def name(kind: str, text: str) -> str:
        compressed = re.match(r"\((\d+)\)(?: (.*))?", text)
        if not compressed:
            return text
        if compressed.group(2):
            names[(kind, compressed.group(1))] = compressed.group(2)
        return names.get((kind, compressed.group(1)), text)

    costs: collections.Counter = collections.Counter()
    obj = function = ""
    address = 0
    skip_call_cost = False
    with open(dump) as lines:
        for line in lines:
            first = line[:1]
            if first.isdigit() or first in "+-*":
                fields = line.split()
                position = fields[0]
                if position.startswith("0x"):
                    address = int(position, 16)
                elif position[0] in "+-":
                    step = int(position[1:], 0)
                    address += step if position[0] == "+" else -step
                if skip_call_cost:  # a call's line: the callee's cost, counted where it is spent
                    skip_call_cost = False
                    continue
                count = int(fields[2]) if len(fields) > 2 else 0
                if obj == str(binary):
                    index = bisect.bisect_right(starts, address) - 1
                    costs[symbols[index][1] if index >= 0 else "?"] += count
                else:
                    costs[f"{Path(obj).name}:{function}"] += count
            elif line.startswith("ob="):
                obj = name("ob", line[3:].strip())
            elif line.startswith("fn="):
                function = name("fn", line[3:].strip())
            elif line.startswith("cfn="):
                name("fn", line[4:].strip())
            elif line.startswith("cob="):
                name("ob", line[4:].strip())
            elif line.startswith("calls="):
                skip_call_cost = True
    return costs


def demangled(names: list[str]) -> list[str]:
    try:
        ran = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names), capture_output=True,
                             text=True, check=True)
        return ran.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", required=True, help="the variables servers.py printed (KEY=VALUE lines)")
    parser.add_argument("--bin", action="append", required=True, help="a folder with uploadd and uploadctl (once or twice)")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--top", type=int, default=25, help="functions to list (the largest changes, with two builds)")
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        print("instructions.py: valgrind is not installed: apt-get install valgrind", file=sys.stderr)
        return 2
    if len(args.bin) > 2:
        parser.error("give one build, or two to compare")

    with Scratch(args.env, "instructions") as scratch:
        url, home, tag, registry = scratch.url, scratch.home, scratch.tag, scratch.registry
        warm_up, measured = scratch.files(300, 4096, "w"), scratch.files(args.files, 4096)
        results = []
        for number, build in enumerate(args.bin):
            dump = home / f"callgrind-{number}"
            binary = runnable_copy(Path(build).resolve(), home / f"bin-{number}", dump)
            daemon = Uploadd(home / f"daemon-{number}", registry, binaries=home / f"bin-{number}")
            daemon.start(timeout=300)

            def upload(paths: list[str], round_: str) -> None:
                added = daemon.ctl("add", *paths, "--to", f"{url}{tag}-{number}-{round_}/", "--protocol", "put",
                                   "--snapshot", "none", check="uploadctl add")
                daemon.ctl("wait", *added.stdout.split(), check="uploadctl wait")

            upload(warm_up, "warm")
            subprocess.run(["callgrind_control", "--zero", str(daemon.pid)], check=True, capture_output=True)
            upload(measured, "measured")
            subprocess.run(["callgrind_control", "--dump", str(daemon.pid)], check=True, capture_output=True)
            registry.stop(daemon.proc, timeout=60.0)
            costs = self_costs(Path(f"{dump}.{daemon.pid}.1"), binary)
            total = sum(costs.values())
            results.append(costs)
            print(f"{build}: {total / 1e6:.1f} million instructions, {total / args.files:,.0f} a file", flush=True)

        if len(results) == 1:
            top = results[0].most_common(args.top)
            for (_, count), label in zip(top, demangled([symbol for symbol, _ in top])):
                print(f"{count / args.files:10,.0f} a file  {label}")
        else:
            before, after = results
            changes = sorted(before.keys() | after.keys(), key=lambda s: abs(after[s] - before[s]), reverse=True)
            changes = changes[:args.top]
            print(f"{'before':>10} {'after':>10} {'change':>10}  (instructions a file)")
            for symbol, label in zip(changes, demangled(changes)):
                print(f"{before[symbol] / args.files:10,.0f} {after[symbol] / args.files:10,.0f} "
                      f"{(after[symbol] - before[symbol]) / args.files:+10,.0f}  {label}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
