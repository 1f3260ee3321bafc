#!/usr/bin/env python3
"""Reference receiver for uploadd: the chunked block protocol, multipart POST, file serving.

Python 3.11 standard library only. Bodies (Content-Length or chunked, `Expect: 100-continue`
honoured) are parsed as they stream in and file bytes go straight to temp files in DIR, so memory
does not grow with upload size. Start it with

    python3 receiver.py --host 127.0.0.1 --port 0 --dir DIR --token-file FILE [--public-url URL]
        [--max-block-size SIZE] [--max-form-size SIZE] [--max-connections N] [--quiet]

(`--token T` works too, but puts the token where `ps` shows it; `--insecure-no-token`, for tests
only, takes requests without one) and read the line `listening on http://HOST:PORT` from stdout.
Every answer is JSON; every error is {"code":<status>,"message":"..."}.

The token. Every endpoint needs it, in the header `Authorization: Bearer T` or `X-Upload-Token: T`.
POST /upload and POST /form also take it as the multipart text field `token`, which must come
before the file part (`block`, or /form's file). It is checked before any file byte is read: a
wrong header is answered 401 before the body (and without `100 Continue`), a wrong `token` field as
soon as that field has arrived, and a file part that starts with no token seen yet gets 401 too.
After an early answer the receiver reads at most 1 MiB (2 s) more of the body, then closes.

Limits: 64 text fields per request, 64 KiB per field and 256 KiB for all of them; one file part;
a /upload body at most --max-block-size (default 64 MiB) plus 512 KiB of fields and multipart
framing, and a block no longer than the one its sequenceNo calls for; a /form body at most
--max-form-size (default 1 GiB) plus the same; --max-connections (default 32) connections at a
time, more get 503 with `Retry-After: 1` and are closed. Over a size limit: 413.

POST /upload, the chunked block protocol (multipart/form-data; fields are text parts, and every
field must come before the part `block`, except crc):
  init   sequenceNo=0, blockSize (at most --max-block-size), totFileSize, suffix (extension without
         dot, [A-Za-z0-9]{0,16}), token, an empty part `block`
                                             -> 200 {"code":0,"message":"ok","data":{"upToken":"<hex>"}}
  block  block i (0-based): sequenceNo=i+1, the same fields, upToken, crc (zlib CRC32 of the block,
         hex, any case, leading zeros optional), the bytes in part `block`. All blocks are blockSize
         long except the last, which holds the rest; a 0-byte file is one empty block.
                                             -> 200 {"code":0,"message":"ok","data":{"sequenceNo":i+1}}
         The block that completes the file (any order is fine), and any block sent after that,
         gets                                -> 200 {"code":0,"message":"ok","data":{"fileUrl":URL}}
         with URL = <public-url>/files/<upToken>.<suffix> (no dot when suffix is empty). A block
         sent twice is accepted. State lives in DIR/.uploads/<upToken>/ and survives a restart.
  errors 400 bad or missing field, wrong block length, "crc mismatch ..."; 401 missing or wrong
         token; 404 unknown upToken (answered before the block is read); 413 over a limit.
POST /form   text fields plus exactly one file part, saved as DIR/<filename> (a plain base name)
             -> 201 {"url","name","size","sha256","fields":{...},"field_name","content_type"}
             (`fields` without `token`). An existing name is never replaced: the same bytes again
             get 200 and the same answer, other bytes 409.
GET|HEAD /files/<name> serves a file; DELETE /files/<name> -> 204.
GET /stats -> {"requests","upload_requests","blocks_received","block_bytes_received",
  "duplicate_blocks","form_uploads","form_bytes_received"} (blocks: accepted ones, duplicates
  included); POST /stats/reset zeroes them.
Stored files are 0600; they are written under a random temp name (mkstemp), fsynced and linked
into place, never over an existing name.
"""
import argparse, email.message, filecmp, hashlib, hmac, json, mimetypes, os, queue, re, secrets
import shutil, socket, stat, sys, tempfile, threading, time, zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit

CHUNK = 256 * 1024
FIELD_LIMIT = 64 * 1024            # one text field
FIELDS_TOTAL_LIMIT = 256 * 1024    # all text fields of one request
MAX_FIELDS = 64
FORM_OVERHEAD = 512 * 1024         # fields, part headers and boundaries on top of the file bytes
SMALL_BODY = 64 * 1024             # what /stats, /files and errors may carry
LINGER_BYTES = 1 << 20             # read (and drop) at most this much after an early answer
LINGER_SECONDS = 2.0
IDLE_TIMEOUT = 60                  # waiting for the next request on a connection
IO_TIMEOUT = 120                   # no byte for this long in a request: give up
FILE_MODE = 0o600
MiB = 1 << 20
SUFFIX_RE = re.compile(r"[A-Za-z0-9]{0,16}")
TOKEN_RE = re.compile(r"[0-9a-f]{32}")
UINT_RE = re.compile(r"[0-9]{1,19}")
SECRET_RE = re.compile(r"[\x21-\x7e]{1,1024}")
STAT_KEYS = ("requests", "upload_requests", "blocks_received", "block_bytes_received",
             "duplicate_blocks", "form_uploads", "form_bytes_received")
BUSY = json.dumps({"code": 503, "message": "too many connections; try again"}).encode()
BUSY_ANSWER = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
               b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(BUSY), BUSY))


class HTTPError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


def missing_token():
    return HTTPError(401, "missing token: send `Authorization: Bearer TOKEN` or `X-Upload-Token: TOKEN`, "
                          "or the field `token` before the file part")


class Body:
    """The request body as a stream: Content-Length or Transfer-Encoding: chunked. Nothing is read
    until read() is called; past `limit` bytes it raises 413."""

    def __init__(self, rfile, headers):
        self.rfile, self.done, self.total, self.limit, self.length = rfile, False, 0, None, None
        te = headers.get("Transfer-Encoding", "").lower()
        self.chunked = "chunked" in te
        if self.chunked:
            self.left = 0
        else:
            cl = headers.get("Content-Length", "0").strip()
            if not UINT_RE.fullmatch(cl):
                raise HTTPError(400, "bad Content-Length")
            self.left = self.length = int(cl)
            self.done = self.left == 0

    def set_limit(self, limit):
        if self.length is not None and self.length > limit:
            raise HTTPError(413, f"body of {self.length} bytes is larger than this endpoint's limit of {limit}")
        self.limit = limit

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
                for _ in range(100):
                    if self.rfile.readline(8192) in (b"\r\n", b"\n", b""):
                        break
                else:
                    raise HTTPError(400, "malformed chunked body: too many trailers")
                self.done = True
                return b""
            self.left = size
        data = self.rfile.read(min(n, self.left))
        if not data:
            raise HTTPError(400, "request body ended early")
        self.left -= len(data)
        self.total += len(data)
        if self.limit is not None and self.total > self.limit:
            raise HTTPError(413, f"body larger than this endpoint's limit of {self.limit} bytes")
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
    """A text field in memory, within FIELD_LIMIT and the request's share of FIELDS_TOTAL_LIMIT;
    on_end(text) runs as soon as the field is complete."""

    def __init__(self, budget, on_end):
        self.buf, self.budget, self.on_end = bytearray(), budget, on_end

    def write(self, data):
        if len(self.buf) + len(data) > FIELD_LIMIT:
            raise HTTPError(413, f"form field larger than {FIELD_LIMIT} bytes")
        self.budget.take(len(data))
        self.buf += data

    def text(self):
        return self.buf.decode("utf-8", "replace")

    def end(self):
        self.on_end(self.text())


class Budget:
    def __init__(self, left):
        self.left = left

    def take(self, n):
        self.left -= n
        if self.left < 0:
            raise HTTPError(413, f"form fields larger than {FIELDS_TOTAL_LIMIT} bytes in all")


class FileSink:
    """Streams a part into a new temp file (mkstemp: random name, 0600) in `directory`, counting
    size and CRC32 (and SHA-256 with `sha`); more than `limit` bytes is an error."""

    def __init__(self, directory, prefix, name, filename, ctype, limit, too_long, sha=False):
        self.name, self.filename, self.ctype, self.limit, self.too_long = name, filename, ctype, limit, too_long
        self.path = None
        fd, self.path = tempfile.mkstemp(dir=directory, prefix=prefix)
        self.f = os.fdopen(fd, "wb")
        self.size, self.crc, self.sha = 0, 0, hashlib.sha256() if sha else None

    def write(self, data):
        if self.size + len(data) > self.limit:
            raise HTTPError(self.too_long[0], self.too_long[1])
        self.f.write(data)
        self.size += len(data)
        self.crc = zlib.crc32(data, self.crc)
        if self.sha:
            self.sha.update(data)

    def finish(self):
        os.fchmod(self.f.fileno(), FILE_MODE)
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()

    def discard(self):
        if self.f and not self.f.closed:
            self.f.close()
        if self.path and os.path.lexists(self.path):
            os.unlink(self.path)


class NullSink:
    def __init__(self, limit=None):
        self.size, self.limit = 0, limit

    def write(self, data):
        self.size += len(data)
        if self.limit is not None and self.size > self.limit:
            raise HTTPError(413, f"part larger than {self.limit} bytes")


def parse_multipart(body, boundary, open_part):
    """Stream a multipart body; open_part(name, filename, content_type) returns a sink; a sink's
    end(), if it has one, runs as soon as its part is complete (before the next part is read)."""
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

    copy_until_delim(NullSink(FORM_OVERHEAD))  # preamble
    while True:
        while len(buf) < 2:
            fill()
        if buf.startswith(b"--"):  # closing delimiter; ignore the epilogue (within the body limit)
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
        sink = open_part(name, msg.get_filename(), msg.get("Content-Type", ""))
        copy_until_delim(sink)
        if (end := getattr(sink, "end", None)) is not None:
            end()


def valid_name(name):
    """A plain base name: no path separators, control characters or leading dot."""
    return (isinstance(name, str) and name != "" and not name.startswith(".")
            and not any(c in "/\\" or ord(c) < 32 or ord(c) == 127 for c in name)
            and len(name.encode()) <= 255)


def uint(fields, key):
    v = fields.get(key, "").strip()
    if not UINT_RE.fullmatch(v):
        raise HTTPError(400, f"field {key} missing or not a non-negative integer")
    return int(v)


def write_json_atomic(path, obj):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-meta-")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def same_file_content(a, b):
    try:
        if not stat.S_ISREG(os.lstat(b).st_mode):
            return False
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def place(tmp, final):
    """Give the complete temp file `tmp` the name `final` without ever replacing a file: 'new', or
    'same' when `final` already holds these very bytes (a retry); other bytes there: 409."""
    try:
        os.link(tmp, final)
    except FileExistsError:
        if same_file_content(tmp, final):
            return "same"
        raise HTTPError(409, f"{os.path.basename(final)} already exists with other content") from None
    except OSError:  # no hard links on this file system: reserve the name, then rename onto it
        try:
            os.close(os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
        except FileExistsError:
            if same_file_content(tmp, final):
                return "same"
            raise HTTPError(409, f"{os.path.basename(final)} already exists with other content") from None
        os.replace(tmp, final)
    fsync_dir(os.path.dirname(final))
    return "new"


class Receiver(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, addr, args):
        self.address_family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        super().__init__(addr, Handler)
        self.args, self.dir, self.token = args, os.path.abspath(args.dir), args.token
        self.uploads = os.path.join(self.dir, ".uploads")
        os.makedirs(self.uploads, mode=0o700, exist_ok=True)
        self.stats = dict.fromkeys(STAT_KEYS, 0)
        self.lock, self.token_locks = threading.Lock(), {}
        self.slots = threading.BoundedSemaphore(args.max_connections)
        self.rejects = queue.Queue(maxsize=64)
        threading.Thread(target=self.reject_loop, name="reject", daemon=True).start()
        for d in (self.dir, self.uploads):  # temp files left by a crash, older than an hour
            for e in os.scandir(d):
                if e.name.startswith((".tmp-", ".incoming-")) and e.stat(follow_symlinks=False).st_mtime < time.time() - 3600:
                    os.unlink(e.path)

    # ---- at most --max-connections connections; the others get 503 ----
    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            try:
                self.rejects.put_nowait(request)
            except queue.Full:
                self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def reject_loop(self):
        """One thread answers 503 to the connections over the cap, one at a time, in at most ~1 s each."""
        while True:
            sock = self.rejects.get()
            try:
                sock.settimeout(0.5)
                sock.sendall(BUSY_ANSWER)
                sock.shutdown(socket.SHUT_WR)
                deadline, left = time.monotonic() + 1, 64 * 1024
                while left > 0 and time.monotonic() < deadline and (data := sock.recv(left)):
                    left -= len(data)
            except OSError:
                pass
            finally:
                sock.close()

    def count(self, **kw):
        with self.lock:
            for k, v in kw.items():
                self.stats[k] += v

    def token_lock(self, up_token):
        with self.lock:
            return self.token_locks.setdefault(up_token, threading.Lock())

    def token_ok(self, got):
        return self.token is None or hmac.compare_digest(got.encode("utf-8", "replace"), self.token.encode())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uploadd-receiver/2"
    timeout = IO_TIMEOUT

    def log_request(self, code="-", size="-"):  # --quiet drops the request log, not errors
        if not self.server.args.quiet:
            super().log_request(code, size)

    def handle_one_request(self):
        self.connection.settimeout(IDLE_TIMEOUT)  # for the request line
        super().handle_one_request()

    def parse_request(self):
        self.connection.settimeout(self.timeout)
        self.authorized = False
        return super().parse_request()

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

    # ---- the token, before the body ----
    def header_token(self):
        """True (a right token), False (a wrong one) or None (none) from Authorization: Bearer or
        X-Upload-Token; both given must both be right."""
        given = []
        scheme, _, value = self.headers.get("Authorization", "").strip().partition(" ")
        if scheme.lower() == "bearer":
            given.append(value.strip())
        if (x := self.headers.get("X-Upload-Token")) is not None:
            given.append(x.strip())
        if not given:
            return None
        return all(self.server.token_ok(g) for g in given)

    def route(self):
        """(handler, body limit, whether a `token` field may stand in for the header); handler None: 404."""
        path, args = urlsplit(self.path).path, self.server.args
        if self.command == "POST" and path == "/upload":
            return self.do_upload, args.max_block_size + FORM_OVERHEAD, True
        if self.command == "POST" and path == "/form":
            return self.do_form, args.max_form_size + FORM_OVERHEAD, True
        if (self.command, path) == ("GET", "/stats"):
            return self.do_stats, SMALL_BODY, False
        if (self.command, path) == ("POST", "/stats/reset"):
            return self.do_reset, SMALL_BODY, False
        if path.startswith("/files/") and self.command in ("GET", "HEAD", "DELETE"):
            name = unquote(path[len("/files/"):])
            return (lambda body: self.do_file(body, name)), SMALL_BODY, False
        return None, SMALL_BODY, False

    def precheck(self, body):
        """Before any byte of the body is read: the token header, the endpoint, the declared size."""
        handler, limit, field_ok = self.route()
        header = self.header_token()
        if header is False:
            raise HTTPError(401, "wrong token")
        if header is None and self.server.token is not None and not field_ok:
            raise missing_token()
        self.authorized = self.server.token is None or header is True
        if handler is None:
            raise HTTPError(404, f"no such endpoint: {self.command} {urlsplit(self.path).path}")
        if body is not None:
            body.set_limit(limit)
        elif UINT_RE.fullmatch(cl := self.headers.get("Content-Length", "0").strip()) and int(cl) > limit:
            raise HTTPError(413, f"body of {cl} bytes is larger than this endpoint's limit of {limit}")
        return handler

    def require_token(self):
        if not self.authorized:
            raise missing_token()

    def handle_expect_100(self):
        try:
            self.precheck(None)
        except HTTPError as e:  # no 100 Continue: the client need not send the body at all
            self.server.count(requests=1)
            self.close_connection = True
            self.send_json(e.status, {"code": e.status, "message": e.message})
            return False
        return super().handle_expect_100()

    def public(self, name):
        return f"{self.server.args.public_url}/files/{quote(name)}"

    def dispatch(self):
        self.server.count(requests=1)
        path, body = urlsplit(self.path).path, None
        try:
            body = Body(self.rfile, self.headers)
            self.precheck(body)(body)
        except HTTPError as e:
            early = body is None or not body.done
            self.close_connection = self.close_connection or early
            self.send_json(e.status, {"code": e.status, "message": e.message})
            if early:
                self.linger()
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception as e:  # a bug, a full disk: answer 500 rather than hang up
            self.log_error("%s %s failed: %r", self.command, path, e)
            self.close_connection = True
            self.send_json(500, {"code": 500, "message": f"internal error: {e!r}"})
            self.linger()

    def linger(self):
        """After an answer sent before the body's end: stop sending, then read and drop at most
        LINGER_BYTES for at most LINGER_SECONDS, so that the client reads the answer rather than a
        connection reset; then the connection closes."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_WR)
            deadline, left = time.monotonic() + LINGER_SECONDS, LINGER_BYTES
            while left > 0 and (remaining := deadline - time.monotonic()) > 0:
                self.connection.settimeout(remaining)
                data = self.rfile.read1(min(CHUNK, left))
                if not data:
                    break
                left -= len(data)
        except (OSError, ValueError):
            pass

    do_GET = do_POST = do_HEAD = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = dispatch

    def read_form(self, body, open_file):
        """Stream the multipart body. open_file(name, filename, content_type, fields) returns a sink
        for a file part, or None for a text field. A `token` field is checked as soon as it ends."""
        ctype = self.headers.get_content_type()
        boundary = self.headers.get_param("boundary")
        if ctype != "multipart/form-data" or not isinstance(boundary, str) or not 0 < len(boundary) <= 200:
            raise HTTPError(400, "expected Content-Type: multipart/form-data with a boundary")
        fields, count, budget = {}, 0, Budget(FIELDS_TOTAL_LIMIT)

        def ended(name, value):
            fields[name] = value
            if name == "token" and self.server.token is not None:
                if not self.server.token_ok(value.strip()):
                    raise HTTPError(401, "wrong token")
                self.authorized = True

        def part(name, filename, ptype):
            nonlocal count
            sink = open_file(name, filename, ptype, fields)
            if sink is None:
                count += 1
                if count > MAX_FIELDS:
                    raise HTTPError(413, f"more than {MAX_FIELDS} form fields")
                sink = FieldSink(budget, lambda text: ended(name, text))
            return sink
        parse_multipart(body, boundary.encode("latin-1"), part)
        self.require_token()
        return fields

    # ---- POST /upload: the chunked block protocol ----
    def do_upload(self, body):
        self.server.count(upload_requests=1)
        state = {"block": None}

        def open_file(name, filename, ctype, fields):
            if name != "block":
                return None
            self.require_token()
            if state["block"] is not None:
                raise HTTPError(400, "more than one part named block")
            req = self.block_request(fields, before_block=True)  # 404 for an unknown upToken, here
            state["key"] = req and (req["seq"], req["up_token"])
            if req is None:  # init: the block part is empty
                state["block"] = NullSink(SMALL_BODY)
            else:
                state["block"] = FileSink(self.server.uploads, ".incoming-", name, filename, ctype, req["want"],
                                          (400, f"block {req['seq']} is longer than {req['want']} bytes"))
            return state["block"]
        try:
            fields = self.read_form(body, open_file)
            self.upload_step(fields, state)
        finally:
            if isinstance(state["block"], FileSink):
                state["block"].discard()

    def block_request(self, fields, before_block=False):
        """The block a request is about, from its fields (before its bytes are read): None for init,
        else {seq, up_token, udir, meta, count, want}."""
        if before_block:
            for key in ("sequenceNo", "upToken"):
                if key not in fields and (key == "sequenceNo" or fields["sequenceNo"].strip() != "0"):
                    raise HTTPError(400, f"field {key} missing before the part block (fields come first)")
        seq = uint(fields, "sequenceNo")
        if seq == 0:
            return None
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
        want = size if seq < count else total - size * (count - 1)
        return {"seq": seq, "up_token": up_token, "udir": udir, "meta": meta, "count": count, "want": want}

    def upload_step(self, fields, state):
        req = self.block_request(fields)  # again: fields after the block part must agree
        if "key" in state and state["key"] != (req and (req["seq"], req["up_token"])):
            raise HTTPError(400, "sequenceNo or upToken changed after the block part")
        if req is None:
            size, total, suffix = uint(fields, "blockSize"), uint(fields, "totFileSize"), fields.get("suffix", "")
            if size == 0:
                raise HTTPError(400, "blockSize must be > 0")
            if size > self.server.args.max_block_size:
                raise HTTPError(413, f"blockSize {size} is larger than this receiver's limit of "
                                     f"{self.server.args.max_block_size}")
            if not SUFFIX_RE.fullmatch(suffix):
                raise HTTPError(400, "suffix must match [A-Za-z0-9]{0,16}")
            up_token = secrets.token_hex(16)
            os.mkdir(os.path.join(self.server.uploads, up_token), 0o700)
            write_json_atomic(os.path.join(self.server.uploads, up_token, "meta.json"),
                              {"blockSize": size, "totFileSize": total, "suffix": suffix,
                               "created": time.time()})
            return self.send_json(200, {"code": 0, "message": "ok", "data": {"upToken": up_token}})

        block = state["block"]
        if block is None:
            raise HTTPError(400, "no part named block")
        seq, up_token, udir, meta, count, want = (req[k] for k in ("seq", "up_token", "udir", "meta", "count", "want"))
        block.finish()
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
        """The blocks into one file: a random temp name (mkstemp, 0600), fsync, linked as `name`."""
        fd, tmp = tempfile.mkstemp(dir=self.server.dir, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                for i in range(1, count + 1):
                    with open(os.path.join(udir, f"block-{i}"), "rb") as f:
                        shutil.copyfileobj(f, out, CHUNK)
                os.fchmod(out.fileno(), FILE_MODE)
                out.flush()
                os.fsync(out.fileno())
            place(tmp, os.path.join(self.server.dir, name))  # 'same': stitched before a crash
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)

    # ---- POST /form: plain multipart upload ----
    def do_form(self, body):
        files = []

        def open_file(name, filename, ctype, fields):
            if filename is None:
                return None
            self.require_token()
            if files:
                raise HTTPError(400, "expected exactly one file part, got more")
            if not valid_name(filename):
                raise HTTPError(400, f"bad file name {filename!r}")
            files.append(FileSink(self.server.dir, ".tmp-form-", name, filename, ctype, self.server.args.max_form_size,
                                  (413, f"file larger than this receiver's limit of {self.server.args.max_form_size}"),
                                  sha=True))
            return files[0]
        try:
            fields = self.read_form(body, open_file)
            fields.pop("token", None)
            if len(files) != 1:
                raise HTTPError(400, f"expected exactly one file part, got {len(files)}")
            f = files[0]
            f.finish()
            placed = place(f.path, os.path.join(self.server.dir, f.filename))
            self.server.count(form_uploads=1, form_bytes_received=f.size)
            self.send_json(201 if placed == "new" else 200,
                           {"url": self.public(f.filename), "name": f.filename, "size": f.size,
                            "sha256": f.sha.hexdigest(), "fields": fields,
                            "field_name": f.name, "content_type": f.ctype})
        finally:
            for f in files:
                f.discard()

    # ---- /files/<name>, /stats ----
    def do_file(self, body, name):
        body.drain()
        path = os.path.join(self.server.dir, name)
        if not valid_name(name):
            raise HTTPError(404, "no such file")
        if self.command == "DELETE":
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    raise HTTPError(404, "no such file")
                os.unlink(path)
            except FileNotFoundError:
                raise HTTPError(404, "no such file") from None
            self.send_response(204)
            self.end_headers()
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            raise HTTPError(404, "no such file") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise HTTPError(404, "no such file")
            self.send_response(200)
            self.send_header("Content-Type", mimetypes.guess_type(name)[0] or "application/octet-stream")
            self.send_header("Content-Length", str(st.st_size))
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


def size_arg(text):
    m = re.fullmatch(r"([0-9]+)([KMG]?)", text.strip(), re.I)
    if not m or int(m[1]) == 0:
        raise argparse.ArgumentTypeError(f"not a size (a number, optionally with K, M or G): {text!r}")
    return int(m[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[m[2].upper()]


def positive_int(text):
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return int(text)


def main():
    p = argparse.ArgumentParser(description="uploadd reference receiver")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--dir", required=True, help="where files and upload state are stored")
    p.add_argument("--token-file", help="require the token in this file (its first line)")
    p.add_argument("--token", help="require this token (visible to `ps`: prefer --token-file)")
    p.add_argument("--insecure-no-token", action="store_true",
                   help="take requests without a token (tests only: any local user can then upload)")
    p.add_argument("--max-block-size", type=size_arg, default=64 * MiB, help="largest blockSize (default 64M)")
    p.add_argument("--max-form-size", type=size_arg, default=1 << 30, help="largest /form file (default 1G)")
    p.add_argument("--max-connections", type=positive_int, default=32, help="connections at a time (default 32)")
    p.add_argument("--public-url", help="base of returned URLs (default http://HOST:PORT)")
    p.add_argument("--quiet", action="store_true", help="no request log on stderr (errors still)")
    args = p.parse_args()
    if sum(x is not None for x in (args.token, args.token_file)) + args.insecure_no_token != 1:
        p.error("give exactly one of --token-file FILE, --token T or --insecure-no-token (tests only)")
    if args.token_file is not None:
        try:
            with open(args.token_file) as f:
                args.token = f.readline().strip()
        except OSError as e:
            p.error(f"--token-file: {e}")
    if args.token is not None and not SECRET_RE.fullmatch(args.token):
        p.error("the token must be 1 to 1024 printable ASCII characters without spaces")
    if args.insecure_no_token:
        print("receiver.py: --insecure-no-token: anyone who can connect can upload, read and delete files",
              file=sys.stderr, flush=True)
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
