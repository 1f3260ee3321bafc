#!/usr/bin/env python3
"""A server that answers every request 503 with Retry-After: 3600 (so a job waits, queued)."""
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n: self.rfile.read(n)
        body = b"busy, come back later\n"
        self.send_response(503); self.send_header("Retry-After", "3600")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    do_PUT = do_POST = do_OPTIONS = do_HEAD = do_GET = do_DELETE = answer
    def log_message(self, *a): pass
port = int(sys.argv[1]); pf = sys.argv[2]
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
open(pf, "w").write(str(__import__("os").getpid()))
srv.serve_forever()
