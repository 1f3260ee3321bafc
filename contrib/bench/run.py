#!/usr/bin/env python3
"""uploadd's benchmark suite: every scenario of issue 6 side by side with its peer, in one command.

    python3 contrib/bench/run.py [--quick] [--runs N] [--only 1,3] [--out contrib/bench/RESULTS.md] [--no-build]
                                 [--strict]

Installs what it needs, builds uploadd (release), starts its own servers and daemons on 127.0.0.1,
runs each scenario's contenders alternately N times, writes a markdown table and JSON beside it,
and stops everything it started, also on failure or Ctrl-C. See contrib/bench/README.md.

Exit status: 0; 1 when setup failed; 2 when a scenario broke, or a measurement of uploadd's (or
uploadctl's) is missing: its run failed, or the server did not end up with the bytes it was sent;
3 with --strict when a target is missed (or cannot be judged), or a row not bound by noise is more
than 10% worse than in the committed RESULTS.json (regression.py); 130 when interrupted.
"""

import argparse
import datetime
import os
import shlex
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchenv  # noqa: E402
import control  # noqa: E402
import folders  # noqa: E402
import images  # noqa: E402
import longlife  # noqa: E402
import measure  # noqa: E402
import regression  # noqa: E402
import report  # noqa: E402
import transfers  # noqa: E402
from benchenv import REPO, log  # noqa: E402
from context import Bench  # noqa: E402

SCENARIOS = [
    ("0", transfers.ceiling),
    ("1", transfers.put_big),
    ("2", transfers.put_many),
    ("3", transfers.tus),
    ("4", transfers.s3),
    ("5", control.adds),
    ("6", control.restart),
    ("7", control.memory),
    ("8", control.idle_cost),
    ("9", control.status_time),
    ("10", longlife.long_life),
    ("11", images.image_prep),
    ("12", transfers.put_tiny),
    ("13", control.queue_scaling),
    ("14", control.dead_server),
    ("15", transfers.https_versions),
    ("16", transfers.global_limit),
    ("17", folders.watched_folder),
]
COMMITTED = REPO / "contrib" / "bench" / "RESULTS.json"
WITHOUT_SERVERS = {"8", "9", "10", "14"}


class Interrupted(BaseException):  # like KeyboardInterrupt: no `except Exception` swallows it
    pass


def on_signal(signum, frame):
    raise Interrupted(f"interrupted by signal {signum}")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and 1 run each (a smoke run, ~1 min)")
    parser.add_argument("--runs", type=int, help="runs per contender (default 5, --quick 1)")
    parser.add_argument("--only", help="comma-separated scenario numbers, 0 (the physical ceiling) to 17")
    parser.add_argument("--out", type=Path,
                        help="the markdown table; the JSON goes beside it (default: contrib/bench/RESULTS.md for "
                             "a full run of every scenario, else .build/bench-results/RESULTS.md)")
    parser.add_argument("--no-build", action="store_true", help="use .build/release as it is")
    parser.add_argument("--strict", action="store_true",
                        help="fail (exit 3) when a target is missed, too; `make bench` runs with it")
    args = parser.parse_args(argv)
    args.runs = args.runs or (1 if args.quick else 5)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    known = [sid for sid, _ in SCENARIOS]
    args.selected = known if not args.only else [s.strip() for s in args.only.split(",") if s.strip()]
    if unknown := [s for s in args.selected if s not in known]:
        parser.error(f"unknown scenario {', '.join(unknown)}; choose from {', '.join(known)}")
    if args.out is None:  # a smoke or partial run never overwrites the committed results
        complete = not args.quick and args.selected == known
        args.out = REPO / ("contrib/bench" if complete else ".build/bench-results") / "RESULTS.md"
    return args


def notes(results: dict) -> None:
    """Sets scenario 1 against the physical ceiling measured in the same run."""
    for sc in results["scenarios"]:
        for r in sc.get("rows", []):
            report.judge(r)
    by_id = {sc["id"]: sc for sc in results["scenarios"]}
    ceiling, put = by_id.get("0"), by_id.get("1")
    if not (ceiling and put) or ceiling.get("not_run") or put.get("not_run"):
        return
    loopback, read = (r.get("summary") for r in ceiling["rows"])
    mine, curl = put["rows"][0].get("summary"), put["rows"][0].get("peer_summary")
    if loopback and mine:
        line = f"Scenario 1 against the ceiling: uploadd reaches {mine['median'] / loopback['median']:.0%} of " \
               f"loopback TCP (iperf3)"
        if curl:
            line += f", curl {curl['median'] / loopback['median']:.0%}"
        if read:
            line += f"; the source reads at {read['median'] / loopback['median']:.1f}× loopback speed"
        put.setdefault("notes", []).append(line + ".")


def ours(name: str | None) -> bool:
    return bool(name) and name.split()[0].rstrip(",") in ("uploadd", "uploadctl")


def verdict(results: dict) -> tuple[list[str], list[str]]:
    """What fails the run: measurements of uploadd's that are missing (its run raised: a failed
    upload, or a server holding other than the bytes sent), and targets missed or not judged."""
    missing, missed = [], []
    for sc in results["scenarios"]:
        for r in sc.get("rows", []):
            where = f"scenario {sc['id']}, {r['metric']}"
            for who, why, got in ((r["subject"], r["not_run"], r["values"]),
                                  (r["peer"], r["peer_not_run"], r["peer_values"])):
                if ours(who) and (why or not got):
                    missing.append(f"{where}: {who}: {' '.join((why or 'no measurement').split())[:300]}")
            if r["check"] and r["met"] is not True:
                got = []
                if r.get("summary"):
                    got.append(f"median {report.number(r['summary']['median'])} {r['unit']}".rstrip())
                if r.get("ratio") is not None:
                    got.append(f"{r['ratio']:.2f}× {r['peer']}")
                state = "missed" if r["met"] is False else "not judged"
                missed.append(f"{where}: target {r['target']} {state}" + (f" ({', '.join(got)})" if got else ""))
    return missing, missed


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    started = time.monotonic()
    baseline = regression.load(COMMITTED)  # read before a full run writes over it
    registry = measure.Registry()
    bench = Bench(args, registry)
    results = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
               "command": "python3 contrib/bench/run.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
               "quick": args.quick, "runs": args.runs, "sizes": bench.size, "scenarios": []}
    status = 0
    try:
        for pid, cmdline in measure.leftovers(bench.markers):
            log(f"stopping a leftover of an earlier run: {pid} {cmdline[:120]}")
            os.kill(pid, signal.SIGKILL)
        benchenv.setup(build=not args.no_build)
        bench.prepare()
        if any(s not in WITHOUT_SERVERS for s in args.selected):
            bench.start_servers()
        results["machine"] = benchenv.describe_machine()
        for sid, scenario in SCENARIOS:
            if sid not in args.selected:
                continue
            log(f"scenario {sid}: {scenario.__doc__.splitlines()[0] if scenario.__doc__ else scenario.__name__}")
            # What earlier work left to write back (a build, the scenario before) must not throttle
            # this one's writers: the kernel slows every writer to the disk's pace while much is dirty.
            os.sync()
            t0 = time.monotonic()
            try:
                outcome = scenario(bench)
            except (Interrupted, KeyboardInterrupt):
                raise
            except Exception as error:  # noqa: BLE001 - a broken scenario is reported, the others run
                traceback.print_exc()
                outcome = {"title": scenario.__name__, "rows": [], "not_run": f"{error.__class__.__name__}: {error}"}
                status = 2
            outcome["id"] = sid
            outcome["seconds"] = round(time.monotonic() - t0, 1)
            results["scenarios"].append(outcome)
            log(f"scenario {sid} took {outcome['seconds']} s")
    except (Interrupted, KeyboardInterrupt) as error:
        log(f"stopping: {error or 'Ctrl-C'}")
        status = 130
    except (benchenv.SetupError, RuntimeError, OSError) as error:  # scenarios catch their own
        log(f"setup failed: {error}")
        status = 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a second Ctrl-C does not cut cleanup short
            signal.signal(sig, signal.SIG_IGN)
        bench.stop_daemons()
        registry.stop_all()
        bench.stop_servers()
        shutil.rmtree(bench.shm, ignore_errors=True)
        for pid, cmdline in measure.leftovers(bench.markers):
            log(f"still running after cleanup, killing: {pid} {cmdline[:120]}")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    results["seconds"] = time.monotonic() - started
    if status == 130:
        log("interrupted: no results written")
    elif results["scenarios"] and "machine" in results:
        notes(results)
        out = args.out.resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        text = report.write(results, out, out.with_suffix(".json"))
        print(text)
        said = set()
        for sc in results["scenarios"]:
            for r in sc.get("rows", []):
                for who, why in ((r["subject"], r["not_run"]), (r["peer"], r["peer_not_run"])):
                    if why and (sc["id"], who, why) not in said:
                        said.add((sc["id"], who, why))
                        log(f"scenario {sc['id']}, {r['metric']}: {who} not run: {' '.join(why.split())[:300]}")
        log(f"wrote {out} and {out.with_suffix('.json')} in {results['seconds']:.0f} s")
        missing, missed = verdict(results)
        if missing:
            log(f"FAILED: {len(missing)} measurement(s) of uploadd missing:")
            for line in missing:
                log(f"  {line}")
            status = status or 2
        worse = regression.regressions(results, baseline)
        if worse:
            log(f"{'FAILED (--strict): ' if args.strict else ''}{len(worse)} regression(s) of more than "
                f"{regression.TOLERANCE:.0%} against {COMMITTED.relative_to(REPO)}:")
            for line in worse:
                log(f"  {line}")
            if args.strict:
                status = status or 3
        if args.strict and missed:
            log(f"FAILED (--strict): {len(missed)} target(s) missed:")
            for line in missed:
                log(f"  {line}")
            status = status or 3
    return status


if __name__ == "__main__":
    sys.exit(main())
