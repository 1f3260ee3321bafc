#!/usr/bin/env python3
"""rpc.py SOCKET JSON  -> sends one JSON-RPC message or batch (a line), prints the answer line(s)."""
import json, socket, sys
sock_path, payload = sys.argv[1], sys.argv[2]
msg = json.loads(payload)
expected = len(msg) if isinstance(msg, list) else 1
s = socket.socket(socket.AF_UNIX); s.connect(sock_path)
s.sendall((json.dumps(msg) + "\n").encode())
buf = b""; answers = 0
while answers < 1:
    chunk = s.recv(65536)
    if not chunk: break
    buf += chunk
    answers = buf.count(b"\n")
print(buf.decode().strip())
