#!/usr/bin/env python3
"""compare-dump.py EXPECTED PYDECODE: golden-dump's expected.json against pydecode5.py's reading, field by field."""
import json, sys
exp = json.load(open(sys.argv[1])); py = json.load(open(sys.argv[2]))
pj = {j["id"]: j for j in py["jobs"]}
assert py["next_id"] == exp["next_id"], (py["next_id"], exp["next_id"])
assert set(pj) == {j["id"] for j in exp["jobs"]}
bad = 0; checked = 0
def eq(a, b, what):
    global bad, checked
    checked += 1
    if a != b: bad += 1; print("DIFF", what, a, b)
sec = lambda d: None if d is None else d["reference_seconds"]
for e in exp["jobs"]:
    p = pj[e["id"]]; w = f"job {e['id']}"
    for k in ("state", "protocol", "resolved_protocol", "source", "destination", "bytes_total", "bytes_acked", "attempts",
              "client_token", "metadata", "chunk_size", "user", "priority", "umask", "crashes", "batch", "rank",
              "hook_pending", "revision"):
        eq(e[k], p[k], f"{w} {k}")
    eq(e["headers"], [{"name": a, "value": b} for a, b in p["headers"]], f"{w} headers")
    eq(e["fields"], [{"name": a, "value": b} for a, b in p["fields"]], f"{w} fields")
    eq(e["preparation"], p["preparation"], f"{w} preparation")
    ep = e["prepared"]; pp = p["prepared"]
    if pp is not None: pp = dict(pp, details=[{"name": a, "value": b} for a, b in pp["details"]])
    eq(ep, pp, f"{w} prepared")
    eq(e["checkpoint"], p["checkpoint"], f"{w} checkpoint")
    for k in ("next_attempt_at", "created_at", "updated_at", "failing_since"): eq(sec(e[k]), p[k], f"{w} {k}")
    eq([(sec(h["at"]), h["message"]) for h in e["history"]], [tuple(h) for h in p["history"]], f"{w} history")
    es = e["snapshot"]; ps = p["snapshot"]
    if es is None: eq(ps, None, f"{w} snapshot")
    else:
        for a, b in (("kind", "kind"), ("path", "path"), ("size", "size"), ("device", "device"), ("inode", "inode"),
                     ("modification_time_ns", "mtime_ns"), ("pack_offset", "pack_offset")):
            eq(es.get(a), ps.get(b), f"{w} snapshot {a}")  # format 4 has no pack_offset
        cc = es["cached_copy"]; eq(None if cc is None else [cc["inode"], cc["modification_time_ns"]],
                                   None if ps["cached_copy"] is None else list(ps["cached_copy"]), f"{w} cached_copy")
    eq(e["error"], p["error"], f"{w} error"); eq(e["result"], p["result"], f"{w} result")
print(f"{len(exp['jobs'])} jobs, {checked} fields compared, {bad} differ")
