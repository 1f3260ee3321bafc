#!/usr/bin/env python3
"""Independent reader of journal formats 3, 4 and 5 (cross-check of golden-dump): per-job summary like pydecode.py,
with the fields formats 4 (preparation, batch, prepared file, rank, owed hook, revision) and 5 (pack offset) added."""
import json, struct, sys
sys.path.insert(0, "/tmp/golden-tools")
b = open(sys.argv[1], "rb").read()
VERSION = struct.unpack_from("<I", b, 8)[0]
assert b[:8] == b"UPLOADD\n" and VERSION in (3, 4, 5)

def crc32c(data):
    crc = 0xFFFFFFFF
    for x in data:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF

class R:
    def __init__(s, p): s.p = p; s.o = 0
    def end(s): return s.o == len(s.p)
    def u(s):
        v = 0; sh = 0
        while True:
            x = s.p[s.o]; s.o += 1; v |= (x & 0x7f) << sh
            if x < 0x80: return v
            sh += 7
    def i(s): r = s.u(); return (r >> 1) ^ -(r & 1)
    def raw(s, n): t = s.p[s.o:s.o+n]; assert len(t) == n; s.o += n; return t
    def s_(s): return s.raw(s.u()).decode()
    def b(s): x = s.p[s.o]; s.o += 1; assert x in (0, 1); return x == 1
    def d(s): return struct.unpack("<d", s.raw(8))[0]
    def opt(s, f): return f() if s.b() else None
    def arr(s, f): return [f() for _ in range(s.u())]
    def msg(s, f):
        inner = R(s.raw(s.u())); v = f(inner); assert inner.end(), "message has bytes left"; return v

def cp(r):
    def body(m):
        k = m.s_()
        def payload(p):
            if k == "tus": return {"kind": "tus", "upload_url": p.s_(), "expires": p.opt(p.s_)}
            if k == "s3": return {"kind": "s3", "upload_id": p.s_(), "key": p.s_(), "part_size": p.i()}
            if k == "chunked": return {"kind": "chunked", "up_token": p.s_(), "block_size": p.i(), "blocks_acknowledged": p.i()}
            raise ValueError(k)
        return m.msg(payload)
    return r.msg(body)

def kv(r): return r.msg(lambda m: (m.s_(), m.s_()))

def job(r):
    j = {"id": r.u()}
    def spec(m):
        return {"source": m.s_(), "destination": m.s_(), "protocol": m.s_(), "headers": m.arr(lambda: kv(m)),
                "fields": m.arr(lambda: kv(m)), "user": m.opt(m.s_), "chunk_size": m.opt(m.i), "priority": m.i(),
                "snapshot_mode": m.s_(), "image": m.opt(m.s_), "client_token": m.opt(m.s_),
                "metadata": m.opt(lambda: dict(m.arr(lambda: kv(m)))), "umask": m.opt(m.u)} | (
                {"preparation": m.arr(lambda: m.msg(lambda p: {"step": p.s_(), "options": p.s_()})), "batch": m.opt(m.u)}
                if VERSION >= 4 else {})
    j.update(r.msg(spec))
    j["state"] = r.s_(); j["resolved_protocol"] = r.opt(r.s_)
    j["snapshot"] = r.opt(lambda: r.msg(lambda m: {"kind": m.s_(), "path": m.s_(), "size": m.i(), "device": m.u(), "inode": m.u(),
                                                   "mtime_ns": m.i(), "cached_copy": m.opt(lambda: (m.u(), m.i()))}
                                                  | ({"pack_offset": m.opt(m.i)} if VERSION >= 5 else {})))
    j["bytes_total"] = r.i(); j["bytes_acked"] = r.i(); j["checkpoint"] = r.opt(lambda: cp(r))
    j["attempts"] = r.i(); j["failures_without_progress"] = r.i(); j["next_attempt_at"] = r.opt(r.d)
    j["error"] = r.opt(lambda: r.msg(lambda m: {"code": m.s_(), "message": m.s_(), "status": m.opt(m.i)}))
    j["result"] = r.opt(lambda: r.msg(lambda m: {"url": m.opt(m.s_), "status": m.opt(m.i), "body": m.opt(m.s_)}))
    j["created_at"] = r.d(); j["updated_at"] = r.d(); j["history"] = r.arr(lambda: r.msg(lambda m: (m.d(), m.s_())))
    j["crashes"] = r.i(); j["failing_since"] = r.opt(r.d)
    if VERSION >= 4:
        j["prepared"] = r.opt(lambda: r.msg(lambda m: {"path": m.s_(), "size": m.i(), "sha256": m.s_(), "file_name": m.opt(m.s_),
                                                       "content_type": m.opt(m.s_), "details": m.arr(lambda: kv(m))}))
        j["rank"] = r.opt(r.i); j["hook_pending"] = r.b(); j["revision"] = r.u()
    assert r.end(), "trailing bytes"
    return j

jobs = {}; next_id = 1; off = 12; counts = {}
while off < len(b):
    length, crc = struct.unpack_from("<II", b, off); body = b[off+8:off+9+length]
    assert crc32c(body) == crc, f"crc at {off}"
    t, p = body[0], body[1:]
    counts[t] = counts.get(t, 0) + 1
    r = R(p)
    if t == 1: j = job(r); jobs[j["id"]] = j; next_id = max(next_id, j["id"] + 1)
    elif t == 2:
        jid = r.u(); acked = r.i(); c = r.opt(lambda: cp(r)); assert r.end()
        if jid in jobs:
            jobs[jid]["bytes_acked"] = acked; jobs[jid]["checkpoint"] = c
            if VERSION >= 4: jobs[jid]["revision"] += 1  # replay counts a progress record as a change
    elif t == 3: v = r.u(); assert r.end(); jobs.pop(v, None); next_id = max(next_id, v + 1)
    elif t == 4: next_id = max(next_id, r.u()); assert r.end()
    else: raise ValueError(t)
    off += 9 + length
keys = ("id", "state", "protocol", "resolved_protocol", "source", "destination", "bytes_total", "bytes_acked", "attempts",
        "checkpoint", "client_token", "metadata", "chunk_size", "user", "priority", "umask", "crashes", "headers", "fields")
if VERSION >= 4: keys += ("preparation", "batch", "prepared", "rank", "hook_pending", "revision")
out = {"version": VERSION, "counts": counts, "next_id": next_id,
       "jobs": [{k: j[k] for k in keys} | {"snapshot": j["snapshot"], "history": j["history"], "created_at": j["created_at"],
                "updated_at": j["updated_at"], "next_attempt_at": j["next_attempt_at"], "failing_since": j["failing_since"],
                "error": j["error"], "result": j["result"]}
                for j in sorted(jobs.values(), key=lambda j: j["id"])]}
print(json.dumps(out, ensure_ascii=False, sort_keys=True))
