#!/usr/bin/env python3
"""Reference receiver for uploadd: the chunked block protocol, multipart POST, file serving.

Python 3.11 standard library only. Bodies (Content-Length or chunked, `Expect: 100-continue`
honoured) are parsed as they stream in and file bytes go straight to temp files in DIR, so memory
does not grow with upload size. Start it with

    python3 receiver.py --host 127.0.0.1 --port 0 --dir DIR [--token T] [--public-url URL] [--quiet]

and read the line `listening on http://HOST:PORT` from stdout. Every answer is JSON; every error
is {"code":<status>,"message":"..."}.

POST /upload, the chunked block protocol (multipart/form-data; fields are text parts):
  init   sequenceNo=0, blockSize, totFileSize, suffix (extension without dot, [A-Za-z0-9]{0,16}),
         token, an empty part `block`        -> 200 {"code":0,"message":"ok","data":{"upToken":"<hex>"}}
  block  block i (0-based): sequenceNo=i+1, the same fields, upToken, crc (zlib CRC32 of the block,
         hex, any case, leading zeros optional), the bytes in part `block`. All blocks are blockSize
         long except the last, which holds the rest; a 0-byte file is one empty block.
                                             -> 200 {"code":0,"message":"ok","data":{"sequenceNo":i+1}}
         The block that completes the file (any order is fine), and any block sent after that,
         gets                                -> 200 {"code":0,"message":"ok","data":{"fileUrl":URL}}
         with URL = <public-url>/files/<upToken>.<suffix> (no dot when suffix is empty). A block
         sent twice is accepted. State lives in DIR/.uploads/<upToken>/ and survives a restart.
  errors 400 bad or missing field, wrong block length, "crc mismatch ..."; 401 token differs from
         --token; 404 unknown upToken.
POST /form   text fields plus exactly one file part, saved as DIR/<filename> (a plain base name)
             -> 201 {"url","name","size","sha256","fields":{...},"field_name","content_type"}.
             With --token it needs `Authorization: Bearer TOKEN`.
GET|HEAD /files/<name> serves a file; DELETE /files/<name> -> 204.
GET /stats -> {"requests","upload_requests","blocks_received","block_bytes_received",
  "duplicate_blocks","form_uploads","form_bytes_received"} (blocks: accepted ones, duplicates
  included); POST /stats/reset zeroes them.
"""
import argparse, email.message, hashlib, hmac, json, mimetypes, os, re, secrets, shutil, socket
import tempfile, threading, time, zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit

CHUNK = 256 * 1024
FIELD_LIMIT = 64 * 1024
LINGER_LIMIT = 1 << 30
SUFFIX_RE = re.compile(r"[A-Za-z0-9]{0,16}")
TOKEN_RE = re.compile(r"[0-9a-f]{32}")
UINT_RE = re.compile(r"[0-9]{1,19}")
STAT_KEYS = ("requests", "upload_requests", "blocks_received", "block_bytes_received",
             "duplicate_blocks", "form_uploads", "form_bytes_received")


class HTTPError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


class Body:
    """The request body as a stream: Content-Length or Transfer-Encoding: chunked."""

    def __init__(self, rfile, headers):
        self.rfile, self.done = rfile, False
        te = headers.get("Transfer-Encoding", "").lower()
        self.chunked = "chunked" in te
        if self.chunked:
            self.left = 0
        else:
            cl = headers.get("Content-Length", "0").strip()
            if not UINT_RE.fullmatch(cl):
                raise HTTPError(400, "bad Content-Length")
            self.left = int(cl)
            self.done = self.left == 0

    def read(self, n=CHUNK):
        if self.done:
            return b""
        if self.chunked and self.left == 0:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise HTTPError(400, "malformed chunked body: bad chunk size line") from None
            if size == 0:  # last chunk; skip trailers up to the empty line
                while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                    pass
                self.done = True
                return b""
            self.left = size
        data = self.rfile.read(min(n, self.left))
        if not data:
            raise HTTPError(400, "request body ended early")
        self.left -= len(data)
        if self.left == 0:
            if self.chunked:
                if self.rfile.readline(1024).strip():
                    raise HTTPError(400, "malformed chunked body: no CRLF after chunk")
            else:
                self.done = True
        return data

    def drain(self):
        while self.read():
            pass


class FieldSink:
    def __init__(self):
        self.buf = bytearray()

    def write(self, data):
        if len(self.buf) + len(data) > FIELD_LIMIT:
            raise HTTPError(400, f"form field larger than {FIELD_LIMIT} bytes")
        self.buf += data

    def text(self):
        return self.buf.decode("utf-8", "replace")


class FileSink:
    """Streams a part into a temp file in `directory`, counting size, CRC32 and SHA-256."""

    def __init__(self, directory, prefix, name, filename, ctype):
        self.name, self.filename, self.ctype, self.error = name, filename, ctype, None
        fd, self.path = tempfile.mkstemp(dir=directory, prefix=prefix)
        self.f = os.fdopen(fd, "wb")
        self.size, self.crc, self.sha = 0, 0, hashlib.sha256()

    def write(self, data):
        if not self.f.closed:  # closed: a rejected part, its bytes are dropped
            self.f.write(data)
            self.size += len(data)
            self.crc = zlib.crc32(data, self.crc)
            self.sha.update(data)

    def finish(self):
        os.fchmod(self.f.fileno(), 0o644)
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()

    def discard(self):
        if self.f and not self.f.closed:
            self.f.close()
        if self.path and os.path.exists(self.path):
            os.unlink(self.path)


class NullSink:
    def write(self, data):
        pass


def parse_multipart(body, boundary, open_part):
    """Stream a multipart body; open_part(name, filename, content_type) returns a sink."""
    delim = b"\r\n--" + boundary
    buf = b"\r\n"  # so the first delimiter also starts with CRLF

    def fill():
        nonlocal buf
        data = body.read()
        if not data:
            raise HTTPError(400, "malformed multipart: body ended before the closing boundary")
        buf += data

    def copy_until_delim(sink):
        nonlocal buf
        while True:
            i = buf.find(delim)
            if i >= 0:
                sink.write(buf[:i])
                buf = buf[i + len(delim):]
                return
            keep = len(delim) - 1
            if len(buf) > keep:
                sink.write(buf[:-keep])
                buf = buf[-keep:]
            fill()

    def line(limit):
        nonlocal buf
        while (j := buf.find(b"\r\n")) < 0:
            if len(buf) > limit:
                raise HTTPError(400, "malformed multipart: header line too long")
            fill()
        out, buf = buf[:j], buf[j + 2:]
        return out

    copy_until_delim(NullSink())  # preamble
    while True:
        while len(buf) < 2:
            fill()
        if buf.startswith(b"--"):  # closing delimiter; ignore the epilogue
            body.drain()
            return
        if line(1024).strip(b" \t"):
            raise HTTPError(400, "malformed multipart: junk after boundary")
        msg, total = email.message.Message(), 0
        while hl := line(8192):
            total += len(hl)
            if total > 16384 or b":" not in hl:
                raise HTTPError(400, "malformed multipart: bad part headers")
            try:
                text = hl.decode("utf-8")
            except UnicodeDecodeError:
                text = hl.decode("latin-1")
            key, _, value = text.partition(":")
            msg[key.strip()] = value.strip()
        if msg.get_content_disposition() != "form-data":
            raise HTTPError(400, "malformed multipart: part without Content-Disposition: form-data")
        name = msg.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            raise HTTPError(400, "malformed multipart: part without a name")
        copy_until_delim(open_part(name, msg.get_filename(), msg.get("Content-Type", "")))


def valid_name(name):
    """A plain base name: no path separators, control characters or leading dot."""
    return (isinstance(name, str) and name != "" and not name.startswith(".")
            and not any(c in "/\\" or ord(c) < 32 or ord(c) == 127 for c in name)
            and len(name.encode()) <= 255)


def write_json_atomic(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Receiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, args):
        self.address_family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        super().__init__(addr, Handler)
        self.args, self.dir = args, os.path.abspath(args.dir)
        self.uploads = os.path.join(self.dir, ".uploads")
        os.makedirs(self.uploads, exist_ok=True)
        self.stats = dict.fromkeys(STAT_KEYS, 0)
        self.lock, self.token_locks = threading.Lock(), {}
        for d in (self.dir, self.uploads):  # temp files left by a crash, older than an hour
            for e in os.scandir(d):
                if e.name.startswith((".tmp-", ".incoming-")) and e.stat().st_mtime < time.time() - 3600:
                    os.unlink(e.path)

    def count(self, **kw):
        with self.lock:
            for k, v in kw.items():
                self.stats[k] += v

    def token_lock(self, up_token):
        with self.lock:
            return self.token_locks.setdefault(up_token, threading.Lock())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uploadd-receiver/1"
    timeout = 300

    def log_request(self, code="-", size="-"):  # --quiet drops the request log, not errors
        if not self.server.args.quiet:
            super().log_request(code, size)

    def send_json(self, status, obj):
        data = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error(self, code, message=None, explain=None):  # used by http.server itself
        self.close_connection = True
        self.send_json(code, {"code": code, "message": message or self.responses.get(code, ("error",))[0]})

    def bearer_ok(self):
        token = self.server.args.token
        got = self.headers.get("Authorization", "")
        return token is None or hmac.compare_digest(got.encode(), f"Bearer {token}".encode())

    def handle_expect_100(self):
        if urlsplit(self.path).path == "/form" and not self.bearer_ok():
            self.send_error(401, "missing or wrong bearer token")
            return False
        return super().handle_expect_100()

    def public(self, name):
        return f"{self.server.args.public_url}/files/{quote(name)}"

    def dispatch(self):
        self.server.count(requests=1)
        path, body = urlsplit(self.path).path, None
        try:
            body = Body(self.rfile, self.headers)
            route = {("POST", "/upload"): self.do_upload, ("POST", "/form"): self.do_form,
                     ("GET", "/stats"): self.do_stats, ("POST", "/stats/reset"): self.do_reset}
            if (self.command, path) in route:
                route[self.command, path](body)
            elif path.startswith("/files/") and self.command in ("GET", "HEAD", "DELETE"):
                body.drain()
                self.do_file(unquote(path[len("/files/"):]))
            else:
                raise HTTPError(404, f"no such endpoint: {self.command} {path}")
        except HTTPError as e:
            self.close_connection = self.close_connection or body is None
            self.send_json(e.status, {"code": e.status, "message": e.message})
            if body is not None and not body.done:
                self.linger(body)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception as e:  # a bug, a full disk: answer 500 rather than hang up
            self.log_error("%s %s failed: %r", self.command, path, e)
            self.close_connection = True
            self.send_json(500, {"code": 500, "message": f"internal error: {e!r}"})

    def linger(self, body):
        """After an early answer, read the rest of the body (within limits) so that the client
        sees the answer rather than a connection reset; reuse the connection only if that works."""
        self.connection.settimeout(5)
        try:
            left = LINGER_LIMIT
            while left > 0 and (data := body.read()):
                left -= len(data)
        except (HTTPError, OSError):
            pass
        self.connection.settimeout(self.timeout)
        self.close_connection = self.close_connection or not body.done

    do_GET = do_POST = do_HEAD = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = dispatch

    def read_form(self, body, open_part):
        ctype = self.headers.get_content_type()
        boundary = self.headers.get_param("boundary")
        if ctype != "multipart/form-data" or not isinstance(boundary, str) or not 0 < len(boundary) <= 200:
            raise HTTPError(400, "expected Content-Type: multipart/form-data with a boundary")
        fields = {}

        def part(name, filename, ptype):
            sink = open_part(name, filename, ptype)
            if sink is None:
                sink = FieldSink()
                fields[name] = sink
            return sink
        parse_multipart(body, boundary.encode("latin-1"), part)
        return {k: v.text() for k, v in fields.items()}

    # ---- POST /upload: the chunked block protocol ----
    def do_upload(self, body):
        self.server.count(upload_requests=1)
        blocks = []

        def open_part(name, filename, ctype):
            if name != "block":
                return None
            if blocks:
                raise HTTPError(400, "more than one part named block")
            blocks.append(FileSink(self.server.uploads, ".incoming-", name, filename, ctype))
            return blocks[0]
        try:
            fields = self.read_form(body, open_part)
            self.upload_step(fields, blocks[0] if blocks else None)
        finally:
            for b in blocks:
                b.discard()

    def upload_step(self, fields, block):
        def uint(key):
            v = fields.get(key, "").strip()
            if not UINT_RE.fullmatch(v):
                raise HTTPError(400, f"field {key} missing or not a non-negative integer")
            return int(v)
        token = self.server.args.token
        if token is not None and not hmac.compare_digest(fields.get("token", "").encode(), token.encode()):
            raise HTTPError(401, "missing or wrong token")
        seq = uint("sequenceNo")
        if seq == 0:
            size, total, suffix = uint("blockSize"), uint("totFileSize"), fields.get("suffix", "")
            if size == 0:
                raise HTTPError(400, "blockSize must be > 0")
            if not SUFFIX_RE.fullmatch(suffix):
                raise HTTPError(400, "suffix must match [A-Za-z0-9]{0,16}")
            up_token = secrets.token_hex(16)
            os.makedirs(os.path.join(self.server.uploads, up_token))
            write_json_atomic(os.path.join(self.server.uploads, up_token, "meta.json"),
                              {"blockSize": size, "totFileSize": total, "suffix": suffix,
                               "created": time.time()})
            return self.send_json(200, {"code": 0, "message": "ok", "data": {"upToken": up_token}})

        up_token = fields.get("upToken", "").strip()
        udir = os.path.join(self.server.uploads, up_token)
        if not TOKEN_RE.fullmatch(up_token) or not os.path.isfile(os.path.join(udir, "meta.json")):
            raise HTTPError(404, "unknown upToken")
        meta = self.read_meta(udir)
        for key in ("blockSize", "totFileSize", "suffix"):
            if key in fields and fields[key].strip() != str(meta[key]):
                raise HTTPError(400, f"{key} {fields[key]!r} differs from init ({meta[key]!r})")
        size, total = meta["blockSize"], meta["totFileSize"]
        count = max(1, -(-total // size))
        if not 1 <= seq <= count:
            raise HTTPError(400, f"sequenceNo {seq} out of range 1..{count}")
        if block is None:
            raise HTTPError(400, "no part named block")
        block.finish()
        want = size if seq < count else total - size * (count - 1)
        if block.size != want:
            raise HTTPError(400, f"block {seq} is {block.size} bytes, expected {want}")
        try:
            crc = int(fields.get("crc", "").strip(), 16)
        except ValueError:
            raise HTTPError(400, "field crc missing or not hex") from None
        if crc != block.crc:
            raise HTTPError(400, f"crc mismatch: block {seq} has crc {block.crc:08x}, request says {crc:08x}")

        name = up_token + (f".{meta['suffix']}" if meta["suffix"] else "")
        with self.server.token_lock(up_token):
            meta = self.read_meta(udir)  # again: another request may have completed the file
            bpath = os.path.join(udir, f"block-{seq}")
            dup = meta.get("done") or os.path.exists(bpath)
            self.server.count(blocks_received=1, block_bytes_received=block.size,
                              duplicate_blocks=int(bool(dup)))
            if not meta.get("done"):
                os.replace(block.path, bpath)
                fsync_dir(udir)
                have = set(os.listdir(udir))
                if all(f"block-{i}" in have for i in range(1, count + 1)):
                    self.stitch(udir, count, name)
                    meta["done"] = True
                    write_json_atomic(os.path.join(udir, "meta.json"), meta)
                    for i in range(1, count + 1):
                        os.unlink(os.path.join(udir, f"block-{i}"))
                else:
                    return self.send_json(200, {"code": 0, "message": "ok", "data": {"sequenceNo": seq}})
        self.send_json(200, {"code": 0, "message": "ok", "data": {"fileUrl": self.public(name)}})

    @staticmethod
    def read_meta(udir):
        with open(os.path.join(udir, "meta.json")) as f:
            return json.load(f)

    def stitch(self, udir, count, name):
        tmp = os.path.join(self.server.dir, f".tmp-{name}")
        with open(tmp, "wb") as out:
            for i in range(1, count + 1):
                with open(os.path.join(udir, f"block-{i}"), "rb") as f:
                    shutil.copyfileobj(f, out, CHUNK)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, os.path.join(self.server.dir, name))
        fsync_dir(self.server.dir)

    # ---- POST /form: plain multipart upload ----
    def do_form(self, body):
        if not self.bearer_ok():
            raise HTTPError(401, "missing or wrong bearer token")
        files = []

        def open_part(name, filename, ctype):
            if filename is None:
                return None
            sink = FileSink(self.server.dir, ".tmp-form-", name, filename, ctype)
            if not valid_name(filename):
                sink.error = f"bad file name {filename!r}"
                sink.f.close()
            files.append(sink)
            return sink
        try:
            fields = self.read_form(body, open_part)
            if len(files) != 1:
                raise HTTPError(400, f"expected exactly one file part, got {len(files)}")
            f = files[0]
            if f.error:
                raise HTTPError(400, f.error)
            f.finish()
            os.replace(f.path, os.path.join(self.server.dir, f.filename))
            fsync_dir(self.server.dir)
            self.server.count(form_uploads=1, form_bytes_received=f.size)
            self.send_json(201, {"url": self.public(f.filename), "name": f.filename, "size": f.size,
                                 "sha256": f.sha.hexdigest(), "fields": fields,
                                 "field_name": f.name, "content_type": f.ctype})
        finally:
            for f in files:
                f.discard()

    # ---- /files/<name>, /stats ----
    def do_file(self, name):
        path = os.path.join(self.server.dir, name)
        if not valid_name(name) or not os.path.isfile(path):
            raise HTTPError(404, "no such file")
        if self.command == "DELETE":
            os.unlink(path)
            self.send_response(204)
            self.end_headers()
            return
        with open(path, "rb") as f:
            self.send_response(200)
            self.send_header("Content-Type", mimetypes.guess_type(name)[0] or "application/octet-stream")
            self.send_header("Content-Length", str(os.fstat(f.fileno()).st_size))
            self.end_headers()
            if self.command == "GET":
                shutil.copyfileobj(f, self.wfile, CHUNK)

    def do_stats(self, body):
        body.drain()
        with self.server.lock:
            stats = dict(self.server.stats)
        self.send_json(200, stats)

    def do_reset(self, body):
        body.drain()
        with self.server.lock:
            self.server.stats = dict.fromkeys(STAT_KEYS, 0)
        self.send_json(200, {"code": 0, "message": "ok"})


def main():
    p = argparse.ArgumentParser(description="uploadd reference receiver")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--dir", required=True, help="where files and upload state are stored")
    p.add_argument("--token", help="require this token (field `token` on /upload, Bearer on /form)")
    p.add_argument("--public-url", help="base of returned URLs (default http://HOST:PORT)")
    p.add_argument("--quiet", action="store_true", help="no request log on stderr (errors still)")
    args = p.parse_args()
    server = Receiver((args.host, args.port), args)
    host = f"[{args.host}]" if ":" in args.host else args.host
    base = f"http://{host}:{server.server_address[1]}"
    args.public_url = (args.public_url or base).rstrip("/")
    print(f"listening on {base}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
