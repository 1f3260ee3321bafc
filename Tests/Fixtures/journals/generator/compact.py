#!/usr/bin/env python3
"""compact.py SOCKET JOURNAL ID: pauses and resumes job ID (one durable record each) until the daemon
replaces the journal file (compaction: a new inode), then stops. Prints how many commands it sent."""
import json, os, socket, sys, time
sock_path, journal, jid = sys.argv[1], sys.argv[2], int(sys.argv[3])
inode = os.stat(journal).st_ino
s = socket.socket(socket.AF_UNIX); s.connect(sock_path); f = s.makefile("rwb")
n = 0
while os.stat(journal).st_ino == inode and n < 30000:
    method = "job.pause" if n % 2 == 0 else "job.resume"
    f.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": {"id": jid}}) + "\n").encode()); f.flush()
    answer = json.loads(f.readline())
    if "error" in answer: print("error", answer, file=sys.stderr); sys.exit(1)
    n += 1
# leave the job as it was (queued) when the count is odd
if n % 2 == 1:
    f.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": "job.resume", "params": {"id": jid}}) + "\n").encode()); f.flush()
    json.loads(f.readline()); n += 1
print(n, "commands; journal replaced:", os.stat(journal).st_ino != inode)
