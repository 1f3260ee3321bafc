#!/usr/bin/env python3
"""Independent reader of journal formats 1 and 2 (for cross-checking the Swift dump). Prints per-job
summaries as JSON: id, state, protocol, resolved, acked, total, attempts, checkpoint, snapshot kind/path, next_id."""
import json, struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"UPLOADD\n"
ver = struct.unpack_from("<I", b, 8)[0]

def crc32c(data):
    crc = 0xFFFFFFFF
    for x in data:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF

class R:
    def __init__(s, p): s.p = p; s.o = 0
    def u(s):
        v = 0; sh = 0
        while True:
            x = s.p[s.o]; s.o += 1; v |= (x & 0x7f) << sh
            if x < 0x80: return v
            sh += 7
    def i(s): r = s.u(); return (r >> 1) ^ -(r & 1)
    def s_(s): n = s.u(); t = s.p[s.o:s.o+n].decode(); s.o += n; return t
    def b(s): x = s.p[s.o]; s.o += 1; assert x in (0, 1); return x == 1
    def d(s): v = struct.unpack_from("<d", s.p, s.o)[0]; s.o += 8; return v
    def opt(s, f): return f() if s.b() else None
    def arr(s, f): return [f() for _ in range(s.u())]

def cp2(r):
    k = r.s_()
    if k == "tus": return {"kind": "tus", "upload_url": r.s_(), "expires": r.opt(r.s_)}
    if k == "s3": return {"kind": "s3", "upload_id": r.s_(), "key": r.s_(), "part_size": r.i()}
    if k == "chunked": return {"kind": "chunked", "up_token": r.s_(), "block_size": r.i(), "blocks_acknowledged": r.i()}
    raise ValueError(k)

def job2(r):
    j = {"id": r.u()}
    kv = lambda: (r.s_(), r.s_())
    spec = {"source": r.s_(), "destination": r.s_(), "protocol": r.s_(), "headers": r.arr(kv), "fields": r.arr(kv),
            "user": r.opt(r.s_), "chunk_size": r.opt(r.i), "priority": r.i(), "snapshot_mode": r.s_(), "image": r.opt(r.s_),
            "client_token": r.opt(r.s_), "metadata": r.opt(lambda: dict(r.arr(kv)))}
    j.update(spec)
    j["state"] = r.s_(); j["resolved_protocol"] = r.opt(r.s_)
    j["snapshot"] = r.opt(lambda: {"kind": r.s_(), "path": r.s_(), "size": r.i(), "device": r.u(), "inode": r.u(), "mtime_ns": r.i()})
    j["bytes_total"] = r.i(); j["bytes_acked"] = r.i(); j["checkpoint"] = r.opt(lambda: cp2(r))
    j["attempts"] = r.i(); j["failures_without_progress"] = r.i(); j["next_attempt_at"] = r.opt(r.d)
    j["error"] = r.opt(lambda: {"code": r.s_(), "message": r.s_(), "status": r.opt(r.i)})
    j["result"] = r.opt(lambda: {"url": r.opt(r.s_), "status": r.opt(r.i), "body": r.opt(r.s_)})
    j["created_at"] = r.d(); j["updated_at"] = r.d(); j["history"] = r.arr(lambda: (r.d(), r.s_()))
    assert r.o == len(r.p), "trailing bytes"
    return j

def cp1(c):
    if c is None: return None
    (k, v), = c.items()
    if k == "tus": return {"kind": "tus", "upload_url": v["uploadURL"], "expires": v.get("expires")}
    if k == "s3": return {"kind": "s3", "upload_id": v["uploadID"], "key": v["key"], "part_size": v["partSize"]}
    return {"kind": "chunked", "up_token": v["upToken"], "block_size": v["blockSize"], "blocks_acknowledged": v["blocksAcknowledged"]}

def job1(p):
    s = p["spec"]
    return {"id": p["id"], "source": s["source"], "destination": s["destination"], "protocol": s["uploadProtocol"],
            "state": p["state"], "resolved_protocol": p.get("resolvedProtocol"), "snapshot": p.get("snapshot") and {"kind": p["snapshot"]["kind"], "path": p["snapshot"]["path"]},
            "bytes_total": p["bytesTotal"], "bytes_acked": p["bytesAcked"], "checkpoint": cp1(p.get("checkpoint")),
            "attempts": p["attempts"], "client_token": s.get("clientToken"), "metadata": s.get("metadata"), "chunk_size": s.get("chunkSize"),
            "user": s.get("user"), "priority": s["priority"], "history": p["history"]}

jobs = {}; next_id = 1; off = 12; counts = {}
while off < len(b):
    length, crc = struct.unpack_from("<II", b, off); body = b[off+8:off+9+length]
    assert crc32c(body) == crc, f"crc at {off}"
    t, p = body[0], body[1:]
    counts[t] = counts.get(t, 0) + 1
    if ver == 1:
        v = json.loads(p)
        if t == 1: j = job1(v); jobs[j["id"]] = j; next_id = max(next_id, j["id"] + 1)
        elif t == 2:
            if v["id"] in jobs: jobs[v["id"]]["bytes_acked"] = v["bytesAcked"]; jobs[v["id"]]["checkpoint"] = cp1(v.get("checkpoint"))
        elif t == 3: jobs.pop(v, None); next_id = max(next_id, v + 1)
        elif t == 4: next_id = max(next_id, v)
    else:
        r = R(p)
        if t == 1: j = job2(r); jobs[j["id"]] = j; next_id = max(next_id, j["id"] + 1)
        elif t == 2:
            jid = r.u(); acked = r.i(); c = r.opt(lambda: cp2(r)); assert r.o == len(p)
            if jid in jobs: jobs[jid]["bytes_acked"] = acked; jobs[jid]["checkpoint"] = c
        elif t == 3: v = r.u(); jobs.pop(v, None); next_id = max(next_id, v + 1)
        elif t == 4: next_id = max(next_id, r.u())
    off += 9 + length
out = {"version": ver, "counts": counts, "next_id": next_id,
       "jobs": [{k: j[k] for k in ("id", "state", "protocol", "resolved_protocol", "source", "destination", "bytes_total", "bytes_acked",
                                   "attempts", "checkpoint", "client_token", "metadata", "chunk_size", "user", "priority")}
                | {"snapshot": j["snapshot"] and {"kind": j["snapshot"]["kind"], "path": j["snapshot"]["path"]}, "history_count": len(j["history"])}
                for j in sorted(jobs.values(), key=lambda j: j["id"])]}
print(json.dumps(out, ensure_ascii=False, sort_keys=True))
