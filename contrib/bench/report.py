"""The results: a markdown table and a JSON file beside it."""

import json
import operator

from measure import summary

OPS = {">=": operator.ge, "<=": operator.le, "<": operator.lt, ">": operator.gt}


def number(x: float) -> str:
    if x is None:
        return "–"
    a = abs(x)
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    if a >= 0.01:
        return f"{x:.3f}"
    return f"{x:.4f}" if a else "0"


def cell(s: dict | None, unit: str, not_run: str | None) -> str:
    if not_run:
        why = " ".join(not_run.split())
        if len(why) > 200:
            why = why[:70] + " … " + why[-120:]
        return f"not run: {why}".replace("|", "\\|")
    if s is None:
        return "–"
    text = f"{number(s['median'])} {unit}".strip()
    if s["n"] > 1:
        text += f" ({number(s['min'])}–{number(s['max'])})"
    return text


def judge(r: dict) -> dict:
    """Adds summaries, the ratio of medians and whether the target is met."""
    r["summary"] = None if r["not_run"] else summary(r["values"] or [])
    r["peer_summary"] = None if (r["peer_not_run"] or r["peer_values"] is None) else summary(r["peer_values"])
    mine, theirs = r["summary"], r["peer_summary"]
    r["ratio"] = mine["median"] / theirs["median"] if mine and theirs and theirs["median"] else None
    r["met"] = None
    check = r["check"]
    if check and mine and check[0] == "between":
        r["met"] = check[1] <= mine["median"] <= check[2]
    elif check and mine:
        kind, op = check[0], OPS[check[1]]
        if kind == "value":
            r["met"] = op(mine["median"], check[2])
        elif kind == "ratio" and r["ratio"] is not None:
            r["met"] = op(r["ratio"], check[2])
        elif kind == "both":
            r["met"] = op(mine["median"], check[2]) and (r["ratio"] is None or op(r["ratio"], check[3]))
    return r


def markdown(results: dict) -> str:
    m = results["machine"]
    v = m["versions"]
    lines = [
        "# uploadd benchmark results", "",
        f"{results['date']} · `{results['command']}` · {'quick' if results['quick'] else 'full'} mode, "
        f"{results['runs']} run(s) per contender, alternating · took {results['seconds']:.0f} s", "",
        f"**Machine:** {m['nproc']} × {m['cpu']}, {m['memory_gib']} GiB, {m['os']}, Linux {m['kernel']}, "
        f"load average at start {' '.join(map(str, m['load_average_at_start']))}", "",
        "**Versions:** " + " · ".join(f"{k} `{val}`" for k, val in v.items()), "",
        "Each cell is the median (min–max) of the runs; the ratio is uploadd's median over the peer's. "
        "Throughput is bytes over the client's wall time; client CPU is user+system time of the client "
        "processes (for uploadd: uploadctl plus the daemon's CPU over the same span).", "",
        "| # | scenario | metric | uploadd | peer | peer's | uploadd/peer | target | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for sc in results["scenarios"]:
        if sc.get("not_run"):
            lines.append(f"| {sc['id']} | {sc['title']} | | not run: {sc['not_run'][:200]} | | | | | |"
                         .replace("\n", " "))
            continue
        for i, r in enumerate(sc["rows"]):
            met = {True: "yes", False: "**no**", None: "–"}[r["met"]]
            subject = r["subject"] if r["subject"] != "uploadd" else ""
            mine = cell(r["summary"], r["unit"], r["not_run"])
            lines.append("| " + " | ".join([
                sc["id"] if i == 0 else "", sc["title"] if i == 0 else "",
                r["metric"] + (f" ({subject})" if subject else ""), mine, r["peer"] or "",
                cell(r["peer_summary"], r["unit"], r["peer_not_run"]) if r["peer"] else "",
                f"{r['ratio']:.2f}×" if r["ratio"] is not None else "", r["target"], met]) + " |")
    notes = [n for sc in results["scenarios"] for n in sc.get("notes", [])]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    lines += ["", "Why each missed target is missed, with its profile: `contrib/bench/README.md`, "
              "\"Targets missed, and what bounds them\"."]
    return "\n".join(lines) + "\n"


def write(results: dict, md_path, json_path) -> str:
    for sc in results["scenarios"]:
        for r in sc.get("rows", []):
            judge(r)
    text = markdown(results)
    md_path.write_text(text)
    json_path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    return text
