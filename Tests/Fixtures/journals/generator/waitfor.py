#!/usr/bin/env python3
"""waitfor.py UPLOADCTL SOCKET ID EXPR [TIMEOUT]: polls `uploadctl --json show ID` until EXPR (python, job as j) holds."""
import json, subprocess, sys, time
ctl, sock, jid, expr = sys.argv[1:5]
timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 120
deadline = time.time() + timeout
while True:
    out = subprocess.run([ctl, "--socket", sock, "--json", "show", jid], capture_output=True, text=True)
    j = json.loads(out.stdout) if out.returncode == 0 else None
    if j is not None and eval(expr):
        print(f"job {jid}: {j['state']} acked={j['bytes_acked']} attempts={j['attempts']}", file=sys.stderr)
        sys.exit(0)
    if time.time() > deadline:
        print(f"timeout waiting for {jid}: {expr}; last: {out.stdout[:500]}", file=sys.stderr); sys.exit(1)
    time.sleep(0.2)
