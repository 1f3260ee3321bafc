"""Regressions against the committed results (`RESULTS.json`): a row with a target is a regression
when it is more than 10% worse than it was there, in the direction its target says is better.

Compared is what the target judges: the ratio to the peer run beside it for a ratio target (the
peer soaks up much of what the machine does to both), else uploadd's median. Rows whose committed
history spans more than 10% with no change of the code they measure are noise-bound and are not
compared (NOISE_BOUND, with the reason); neither are rows of a quick run, of other sizes than the
committed run's, or that the committed run does not have."""

import json
from pathlib import Path

from report import number

TOLERANCE = 0.10

# (scenario, start of the metric, why its figure moves by more than 10% from run to run of the same code)
NOISE_BOUND = [
    ("1", "", "one 1 GiB PUT rides the machine's memory bandwidth and page reporting: 0.78–1.11× curl, "
              "CPU 0.32–0.68 s within one run"),
    ("2", "files/s, default snapshot", "the copies' packs are synced to a shared disk: 0.51–0.90× curl"),
    ("4", "", "SeaweedFS's own CPU (11 s per GiB) bounds both contenders: 129–158 MiB/s within one run"),
    ("5", "durable adds/s, one at a time", "one fsync per add on a shared disk: 1,822–2,323/s"),
    ("8", "CPU", "0.005% of a core: a few scheduler ticks either way"),
    ("12", "files/s, default snapshot", "as scenario 2's copies: 0.66–0.82× curl"),
    ("13", "READY per job", "one restart per size, a single sample"),
    ("13", "job.list per job", "one listing per size, a single sample"),
]

COMPARED_KINDS = {"ratio", "value", "both"}


def noise_reason(scenario: str, metric: str) -> str | None:
    for sid, start, why in NOISE_BOUND:
        if sid == scenario and metric.startswith(start):
            return why
    return None


def load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def figure(r: dict, kind: str) -> float | None:
    if kind == "ratio":
        return r.get("ratio")
    return (r.get("summary") or {}).get("median")


def same_sizes(results: dict, baseline: dict) -> bool:
    """Whether every size both runs name is the same (a scenario added since has sizes of its own)."""
    mine, theirs = results.get("sizes") or {}, baseline.get("sizes") or {}
    return all(mine[k] == theirs[k] for k in mine.keys() & theirs.keys())


def regressions(results: dict, baseline: dict | None) -> list[str]:
    """One line per row more than TOLERANCE worse than in `baseline` (both judged already)."""
    if not baseline or results["quick"] or baseline.get("quick") or not same_sizes(results, baseline):
        return []
    before = {(sc["id"], r["metric"], r["peer"]): r for sc in baseline["scenarios"] for r in sc.get("rows", [])}
    found = []
    for sc in results["scenarios"]:
        for r in sc.get("rows", []):
            check = r.get("check")
            if not check or check[0] not in COMPARED_KINDS or noise_reason(sc["id"], r["metric"]):
                continue
            old = before.get((sc["id"], r["metric"], r["peer"]))
            kind = "ratio" if check[0] == "ratio" else "value"
            now, then = figure(r, kind), old and figure(old, kind)
            if now is None or not then:
                continue
            higher_is_better = check[1] in (">=", ">")
            change = now / then - 1
            worse = -change if higher_is_better else change
            if worse > TOLERANCE:
                what = "× the peer" if kind == "ratio" else r["unit"]
                found.append(f"scenario {sc['id']}, {r['metric']}: {number(now)} {what} against {number(then)} "
                             f"committed ({worse:.0%} worse)")
    return found
