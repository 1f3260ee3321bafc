#!/usr/bin/env python3
"""A scripted raw HTTP server: the answers no friendly server gives, one scenario per path.

    python3 contrib/test/scripted_http.py --host 127.0.0.1 --port 0 --other-port 0 --dir DIR

prints `listening on http://HOST:PORT other http://HOST:OTHER` once both sockets listen (port 0:
any free one). Python 3.11 standard library only; one process, a thread per connection; SIGTERM
or SIGINT stops it. It speaks HTTP/1.1 (or 1.0) over plain sockets itself, so that every status
line, header and close is the one the scenario says.

The first segment of a request's path names its scenario (SCENARIOS below); the rest is the path
inside it. /store/a/b/f is the file DIR/files/store/a/b/f. Both listeners serve the same
scenarios; the other one is the "other origin" that cross-307 sends clients to. Any other first
segment gets 404.

Every request is written to DIR/requests.jsonl once answered (an endless answer: when it starts),
one JSON object a line: time, listener ("main" or "other"), port, scenario, method, target,
version, headers ([name, value] pairs as sent), body_length and sha256 of the body read (null if
the body was not read), body_read, status, stored (the path under DIR/files written, or null).

What every scenario does unless its row says otherwise:
  PUT, POST     store the body at the path (a path ending in / gets the name `body`): 201 with
                Location, 204 when it replaced a file. Missing folders are made.
  GET, HEAD     the stored file (200) or 404; DELETE removes it (204) or 404.
  MKCOL         makes the folder: 201; 405 if something is there; 409 if its parent is missing.
  PROPFIND      (Depth 0) 207 with a one-response multistatus for a file or folder, else 404.
  OPTIONS       200, no body, `DAV: 1, 2` and Allow.
  Expect        `Expect: 100-continue` gets no `100 Continue`: the client waits, then sends.
  Bodies        Content-Length or chunked. An answer given before the body was read (417, 413,
                a redirect when the client waits for 100-continue) closes the connection after
                reading what the client still sends for up to 2 s idle (10 s in all), as nginx's
                lingering close does, so the client can read the answer.
  Connection    HTTP/1.1 keep-alive, until the client closes or says `Connection: close`.

Scenarios (the first path segment):
  store           the plain server above, but it does send `100 Continue` when asked
  no-continue     the plain server above (named for what it never sends)
  expect-417      `Expect: 100-continue` on any request: 417 Expectation Failed, body unread,
                  connection closed; the same request without it: as the plain server
  see-other       POST: stores the body, then 303 See Other with Location /see-other/result/PATH;
                  GET of that: 200 JSON {"stored", "size", "sha256"} of the stored file
  redirect-307    any request: 307 to /store/PATH on the same origin (the body read first,
  redirect-308    unless the client waits for 100-continue); 308 the same
  cross-307       any request: 307 to http://HOST:OTHER/store/PATH, the other listener
  missing-404     WebDAV folder rules: a PUT or POST whose folder does not exist gets the status
  missing-409     (404, 409, 424 Failed Dependency, 500), nothing made; MKCOL makes one folder at
  missing-424     a time; PROPFIND Depth 0 answers 404 for a missing folder and 207 for one that
  missing-500     exists; a PUT into a folder that exists: 201
  too-large-413   a body over 1 MiB (nginx's client_max_body_size): 413 Request Entity Too Large,
                  from Content-Length before the body, or as soon as a chunked body passes it
  too-large-400   a body over 2.5 MiB (Django's DATA_UPLOAD_MAX_MEMORY_SIZE): 400 Bad Request,
                  its text naming RequestDataTooBig as Django logs it; both take ?limit=BYTES
  endless-options OPTIONS: 200 with `DAV: 1, 2`, Transfer-Encoding: chunked and a body that never
                  ends (a chunk every 0.2 s until the client leaves, at most 10 minutes); every
                  other method as missing-409
  http10          answers are HTTP/1.0 and the connection closes after each
  close           answers are HTTP/1.1 with `Connection: close`, and the connection closes

S3 scenarios: the endpoint is http://HOST:PORT, addressed path-style, and the scenario's name is the
bucket (s3://s3-listparts-501/KEY). No signature is checked. PutObject, CreateMultipartUpload,
UploadPart (ETag: the part's MD5), ListParts, CompleteMultipartUpload, AbortMultipartUpload,
HeadBucket, Get/Head/DeleteObject; objects are DIR/files/BUCKET/KEY, parts DIR/parts/UPLOADID/N.
They send 100 Continue, as S3 does.
  s3                a plain one
  s3-listparts-501  ListParts answers 501 NotImplemented / 500 InternalError / a plain-text 404
  s3-listparts-500  (a server without ListParts); and the first try of part 2 of each key (once
  s3-listparts-404  while the server runs) gets 500 InternalError, so a client that retries asks ListParts
  s3-comma-space    the Authorization header is split on ", " as some servers do: fields joined
                    by "," alone get 400 AuthorizationHeaderMalformed
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from email.utils import formatdate
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape

MAX_LINE = 16 * 1024
MAX_HEADERS = 200
LINGER_IDLE, LINGER_TOTAL = 2.0, 10.0
ENDLESS_INTERVAL, ENDLESS_LIMIT = 0.2, 600.0
REASONS = {100: "Continue", 200: "OK", 201: "Created", 204: "No Content", 207: "Multi-Status",
           303: "See Other", 307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
           404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 411: "Length Required",
           413: "Request Entity Too Large", 417: "Expectation Failed", 424: "Failed Dependency",
           500: "Internal Server Error", 501: "Not Implemented"}


@dataclass(frozen=True)
class Scenario:
    version: str = "HTTP/1.1"          # of the answers
    keep_alive: bool = True            # False: Connection: close and close after each answer
    sends_continue: bool = False       # answers Expect: 100-continue with 100 Continue
    refuses_expect: bool = False       # answers Expect: 100-continue with 417
    missing_folder: int | None = None  # WebDAV folder rules: this status for a PUT/POST into a missing folder
    max_body: int | None = None        # larger bodies get max_body_status
    max_body_status: int = 413
    max_body_text: str = ""
    redirect: tuple[int, str] | None = None  # (status, "same" or "other"): to /store/PATH
    see_other: bool = False
    endless_options: bool = False
    s3: bool = False                   # a small S3 (path-style, the scenario is the bucket; no signature check)
    list_parts_status: int | None = None  # ListParts answered with this status instead
    flaky_part: int | None = None      # the first try of this part number of each key gets 500 (once per run)
    comma_space_auth: bool = False     # Authorization split on ", " only: "a,b" is 400 AuthorizationHeaderMalformed


DJANGO_400 = ("<!doctype html>\n<html lang=\"en\">\n<head>\n  <title>Bad Request (400)</title>\n</head>\n<body>\n"
              "  <h1>Bad Request (400)</h1><p></p>\n</body>\n</html>\n"
              "<!-- RequestDataTooBig: Request body exceeded settings.DATA_UPLOAD_MAX_MEMORY_SIZE. -->\n")
NGINX_413 = ("<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
             "<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n"
             "</body>\r\n</html>\r\n")

SCENARIOS = {
    "store": Scenario(sends_continue=True),
    "no-continue": Scenario(),
    "expect-417": Scenario(refuses_expect=True),
    "see-other": Scenario(see_other=True),
    "redirect-307": Scenario(redirect=(307, "same")),
    "redirect-308": Scenario(redirect=(308, "same")),
    "cross-307": Scenario(redirect=(307, "other")),
    "missing-404": Scenario(missing_folder=404),
    "missing-409": Scenario(missing_folder=409),
    "missing-424": Scenario(missing_folder=424),
    "missing-500": Scenario(missing_folder=500),
    "too-large-413": Scenario(max_body=1 << 20, max_body_status=413, max_body_text=NGINX_413),
    "too-large-400": Scenario(max_body=int(2.5 * (1 << 20)), max_body_status=400, max_body_text=DJANGO_400),
    "endless-options": Scenario(missing_folder=409, endless_options=True),
    "http10": Scenario(version="HTTP/1.0", keep_alive=False),
    "close": Scenario(keep_alive=False),
    "s3": Scenario(sends_continue=True, s3=True),
    "s3-listparts-501": Scenario(sends_continue=True, s3=True, list_parts_status=501, flaky_part=2),
    "s3-listparts-500": Scenario(sends_continue=True, s3=True, list_parts_status=500, flaky_part=2),
    "s3-listparts-404": Scenario(sends_continue=True, s3=True, list_parts_status=404, flaky_part=2),
    "s3-comma-space": Scenario(sends_continue=True, s3=True, comma_space_auth=True),
}


class BadRequest(Exception):
    pass


class TooLarge(Exception):
    pass


class Request:
    def __init__(self, method: str, target: str, version: str, headers: list[tuple[str, str]]):
        self.method, self.target, self.version, self.headers = method, target, version, headers
        parts = urlsplit(target)
        self.path = unquote(parts.path)
        self.query = parse_qs(parts.query, keep_blank_values=True)
        segments = self.path.lstrip("/").split("/", 1)
        self.scenario_name = segments[0]
        self.rest = segments[1] if len(segments) > 1 else ""
        # The body as read: its length and SHA-256, and the temp file holding it.
        self.body_read = False
        self.body_length: int | None = None
        self.sha256: str | None = None
        self.body_file = None

    def header(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    @property
    def expects_continue(self) -> bool:
        return (self.header("expect") or "").strip().lower() == "100-continue"

    @property
    def has_body(self) -> bool:
        if (self.header("transfer-encoding") or "").lower().strip().endswith("chunked"):
            return True
        value = self.header("content-length") or "0"
        return value.isdigit() and int(value) > 0


class Server:
    def __init__(self, root: str, host: str):
        self.root = os.path.abspath(root)
        self.files = os.path.join(self.root, "files")
        self.host = host
        self.log_path = os.path.join(self.root, "requests.jsonl")
        self.log_lock = threading.Lock()
        self.fs_lock = threading.Lock()
        self.other_port = 0
        self.flaky_done: set[tuple[str, str]] = set()  # (bucket, key) whose flaky part has failed once
        self.stopping = threading.Event()
        os.makedirs(self.files, exist_ok=True)
        for name in SCENARIOS:
            os.makedirs(os.path.join(self.files, name), exist_ok=True)

    def log(self, listener: str, port: int, request: Request, status: int, stored: str | None) -> None:
        record = {"time": time.time(), "listener": listener, "port": port, "scenario": request.scenario_name,
                  "method": request.method, "target": request.target, "version": request.version,
                  "headers": [[k, v] for k, v in request.headers], "body_length": request.body_length,
                  "sha256": request.sha256, "body_read": request.body_read, "status": status, "stored": stored}
        line = json.dumps(record) + "\n"
        with self.log_lock, open(self.log_path, "a") as f:
            f.write(line)

    def local_path(self, request: Request) -> str | None:
        """DIR/files/SCENARIO/REST, or None if REST would leave it."""
        base = os.path.join(self.files, request.scenario_name)
        rest = request.rest
        if rest.endswith("/") or rest == "":
            rest += "body" if request.method in ("PUT", "POST") else ""
        path = os.path.normpath(os.path.join(base, rest))
        if path != base and not path.startswith(base + os.sep):
            return None
        return path


class Connection:
    """One client connection: requests one after another until one closes it."""

    def __init__(self, server: Server, sock: socket.socket, listener: str, port: int):
        self.server, self.sock, self.listener, self.port = server, sock, listener, port
        self.rfile = sock.makefile("rb", buffering=64 * 1024)

    # ---- reading ----------------------------------------------------------------------------
    def read_line(self) -> bytes:
        line = self.rfile.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise BadRequest("line too long")
        return line

    def read_head(self) -> Request | None:
        line = self.read_line()
        while line in (b"\r\n", b"\n"):  # blank lines before a request are allowed
            line = self.read_line()
        if not line:
            return None
        parts = line.decode("latin-1").rstrip("\r\n").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise BadRequest(f"bad request line {line[:100]!r}")
        headers = []
        while True:
            line = self.read_line()
            if line in (b"\r\n", b"\n"):
                break
            if not line:
                raise BadRequest("connection closed inside the header")
            if len(headers) >= MAX_HEADERS or b":" not in line:
                raise BadRequest("bad header")
            name, _, value = line.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        return Request(parts[0], parts[1], parts[2], headers)

    def read_body(self, request: Request, limit: int | None) -> None:
        """Reads the body into a temp file, hashing it; TooLarge past limit (the rest unread)."""
        digest = hashlib.sha256()
        body = tempfile.NamedTemporaryFile(dir=self.server.root, prefix=".body-", delete=False)
        length = 0
        request.body_file = body.name
        try:
            chunked = (request.header("transfer-encoding") or "").lower().strip().endswith("chunked")
            if chunked:
                while True:
                    size_line = self.read_line().split(b";", 1)[0].strip()
                    try:
                        size = int(size_line, 16)
                    except ValueError:
                        raise BadRequest(f"bad chunk size {size_line[:40]!r}")
                    if size == 0:
                        while self.read_line() not in (b"\r\n", b"\n", b""):  # trailers
                            pass
                        break
                    if limit is not None and length + size > limit:
                        raise TooLarge()
                    self._copy(size, body, digest)
                    length += size
                    self.read_line()  # the CRLF after the chunk
            else:
                value = request.header("content-length") or "0"
                if not value.isdigit():
                    raise BadRequest("bad Content-Length")
                size = int(value)
                if limit is not None and size > limit:
                    raise TooLarge()
                self._copy(size, body, digest)
                length = size
        finally:
            body.close()
        request.body_read = True
        request.body_length = length
        request.sha256 = digest.hexdigest()

    def _copy(self, size: int, out, digest) -> None:
        while size > 0:
            data = self.rfile.read(min(size, 256 * 1024))
            if not data:
                raise BadRequest("connection closed inside the body")
            out.write(data)
            digest.update(data)
            size -= len(data)

    # ---- writing ----------------------------------------------------------------------------
    def send(self, scenario: Scenario, status: int, headers: list[tuple[str, str]] | None = None,
             body: bytes = b"", close: bool = False, head: bool = False) -> bool:
        """Sends one answer; True if the connection stays open."""
        keep = scenario.keep_alive and not close
        lines = [f"{scenario.version} {status} {REASONS.get(status, 'Status')}",
                 f"Date: {formatdate(usegmt=True)}", "Server: uploadd-scripted-http"]
        for name, value in headers or []:
            lines.append(f"{name}: {value}")
        if status not in (204, 304) and not any(n.lower() == "transfer-encoding" for n, _ in headers or []):
            lines.append(f"Content-Length: {len(body)}")
        if not keep:
            lines.append("Connection: close")
        elif scenario.version == "HTTP/1.0":
            lines.append("Connection: keep-alive")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if not head:
            data += body
        self.sock.sendall(data)
        return keep

    def linger_close(self) -> None:
        """Read what the client still sends (2 s idle, 10 s in all), then close: nginx's lingering close."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER_TOTAL
            while (left := deadline - time.monotonic()) > 0:
                self.sock.settimeout(min(LINGER_IDLE, left))
                if not self.sock.recv(256 * 1024):
                    break
        except OSError:
            pass

    # ---- the loop -----------------------------------------------------------------------------
    def serve(self) -> None:
        try:
            while not self.server.stopping.is_set():
                try:
                    request = self.read_head()
                except BadRequest as error:
                    self.send(SCENARIOS["close"], 400, [("Content-Type", "text/plain")], f"{error}\n".encode(),
                              close=True)
                    return
                if request is None:
                    return
                try:
                    keep = self.answer(request)
                finally:
                    if request.body_file:
                        try:
                            os.unlink(request.body_file)
                        except OSError:
                            pass
                if keep is None:  # answered early: the body may still be on its way
                    self.linger_close()
                    return
                if not keep or (request.header("connection") or "").lower() == "close" or \
                        (request.version == "HTTP/1.0" and (request.header("connection") or "").lower() != "keep-alive"):
                    return
        except (OSError, BadRequest):
            return
        finally:
            try:
                self.rfile.close()
                self.sock.close()
            except OSError:
                pass

    def answer(self, request: Request) -> bool | None:
        """Answers one request: True/False whether the connection stays open, None to close it
        after a lingering read (answered before the body was read)."""
        server = self.server
        scenario = SCENARIOS.get(request.scenario_name)
        plain = SCENARIOS["no-continue"]
        if scenario is None:
            if request.has_body and request.expects_continue:
                self.send(plain, 404, [("Content-Type", "text/plain")], b"no such scenario\n", close=True)
                server.log(self.listener, self.port, request, 404, None)
                return None
            self.read_body(request, None)
            keep = self.send(plain, 404, [("Content-Type", "text/plain")], b"no such scenario\n")
            server.log(self.listener, self.port, request, 404, None)
            return keep

        def early(status: int, headers=None, body: bytes = b"") -> None:
            """An answer before the body: the connection is closed after it."""
            self.send(scenario, status, headers, body, close=True)
            server.log(self.listener, self.port, request, status, None)

        if scenario.refuses_expect and request.expects_continue:
            early(417, [("Content-Type", "text/plain")], b"Expect: 100-continue is not supported here\n")
            return None

        if scenario.redirect:
            status, where = scenario.redirect
            location = (f"/store/{quote(request.rest)}" if where == "same" else
                        f"http://{server.host}:{server.other_port}/store/{quote(request.rest)}")
            headers = [("Location", location), ("Content-Type", "text/plain")]
            if request.has_body and request.expects_continue:
                early(status, headers, f"see {location}\n".encode())
                return None
            self.read_body(request, None)
            keep = self.send(scenario, status, headers, f"see {location}\n".encode())
            server.log(self.listener, self.port, request, status, None)
            return keep

        if scenario.endless_options and request.method == "OPTIONS":
            if request.has_body:
                self.read_body(request, None)
            self.sock.sendall((f"{scenario.version} 200 OK\r\nDate: {formatdate(usegmt=True)}\r\n"
                               "Server: uploadd-scripted-http\r\nDAV: 1, 2\r\nMS-Author-Via: DAV\r\n"
                               "Allow: OPTIONS, GET, HEAD, PUT, DELETE, MKCOL, PROPFIND\r\n"
                               "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n").encode())
            server.log(self.listener, self.port, request, 200, None)
            deadline = time.monotonic() + ENDLESS_LIMIT
            while time.monotonic() < deadline and not server.stopping.is_set():
                self.sock.sendall(b"1\r\n.\r\n")  # an OSError when the client has gone ends it
                time.sleep(ENDLESS_INTERVAL)
            return False

        if request.has_body:
            limit = scenario.max_body
            if limit is not None and "limit" in request.query and request.query["limit"][0].isdigit():
                limit = int(request.query["limit"][0])
            if request.expects_continue and scenario.sends_continue:
                declared = request.header("content-length")
                if not (limit is not None and declared and declared.isdigit() and int(declared) > limit):
                    self.sock.sendall(f"{scenario.version} 100 Continue\r\n\r\n".encode())
            try:
                self.read_body(request, limit)
            except TooLarge:
                early(scenario.max_body_status, [("Content-Type", "text/html")], scenario.max_body_text.encode())
                return None
        else:
            request.body_read = True
            request.body_length = 0
            request.sha256 = hashlib.sha256(b"").hexdigest()

        handler = self.s3 if scenario.s3 else self.method
        status, headers, body, stored = handler(scenario, request)
        keep = self.send(scenario, status, headers, body, head=request.method == "HEAD")
        server.log(self.listener, self.port, request, status, stored)
        return keep

    def s3(self, scenario: Scenario, request: Request):
        """A small S3 for a request whose body has been read: path-style, the scenario's name is the
        bucket, no signature is checked. Objects are DIR/files/SCENARIO/KEY, parts
        DIR/parts/UPLOADID/N until completed."""
        server = self.server
        xml = [("Content-Type", "application/xml")]

        def error(status: int, code: str, message: str):
            body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
                    f"<Resource>{request.path}</Resource><RequestId>scripted</RequestId></Error>\n")
            return status, xml, body.encode(), None

        if scenario.comma_space_auth:
            auth = request.header("authorization") or ""
            fields = auth.split(" ", 1)[1].split(", ") if " " in auth else []
            if not {"Credential", "SignedHeaders", "Signature"} <= {f.split("=", 1)[0] for f in fields}:
                return error(400, "AuthorizationHeaderMalformed",
                             "The authorization header is malformed; its fields must be separated by ', '.")
        key = request.rest
        q = request.query
        m = request.method
        path = server.local_path(request)
        if path is None:
            return error(400, "InvalidArgument", "the key leaves the bucket")
        upload_id = q.get("uploadId", [None])[0]
        parts_dir = os.path.join(server.root, "parts", upload_id or "-")
        if upload_id is not None and not re.fullmatch(r"[0-9a-f]{32}", upload_id):
            return error(404, "NoSuchUpload", "The specified upload does not exist.")
        with server.fs_lock:
            if key == "":
                if m in ("HEAD", "PUT"):
                    return 200, [], b"", None
                if m == "GET":
                    return error(501, "NotImplemented", "ListObjects is not implemented here")
                return error(405, "MethodNotAllowed", "not on a bucket")
            if m == "POST" and "uploads" in q:
                upload_id = os.urandom(16).hex()
                os.makedirs(os.path.join(server.root, "parts", upload_id))
                with open(os.path.join(server.root, "parts", upload_id, "key"), "w") as f:
                    f.write(key)
                body = ('<?xml version="1.0" encoding="UTF-8"?>\n<InitiateMultipartUploadResult>'
                        f"<Bucket>{request.scenario_name}</Bucket><Key>{escape(key)}</Key>"
                        f"<UploadId>{upload_id}</UploadId></InitiateMultipartUploadResult>\n")
                return 200, xml, body.encode(), None
            if upload_id is not None and not os.path.isdir(parts_dir):
                return error(404, "NoSuchUpload", "The specified upload does not exist.")
            if m == "PUT" and upload_id is not None:
                number = q.get("partNumber", ["0"])[0]
                if not number.isdigit() or not 1 <= int(number) <= 10000:
                    return error(400, "InvalidArgument", "bad partNumber")
                if scenario.flaky_part == int(number) and (request.scenario_name, key) not in server.flaky_done:
                    server.flaky_done.add((request.scenario_name, key))
                    return error(500, "InternalError", "We encountered an internal error. Please try again.")
                target = os.path.join(parts_dir, str(int(number)))
                self._take_body(request, target)
                return 200, [("ETag", f'"{file_md5(target)}"')], b"", None
            if m == "GET" and upload_id is not None:
                if scenario.list_parts_status == 404:
                    return 404, [("Content-Type", "text/plain")], b"404 page not found\n", None
                if scenario.list_parts_status is not None:
                    return error(scenario.list_parts_status, "NotImplemented" if scenario.list_parts_status == 501
                                 else "InternalError", "ListParts is not supported here")
                listed = sorted(int(n) for n in os.listdir(parts_dir) if n.isdigit())
                items = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>&quot;{file_md5(os.path.join(parts_dir, str(n)))}"
                                f"&quot;</ETag><Size>{os.path.getsize(os.path.join(parts_dir, str(n)))}</Size></Part>"
                                for n in listed)
                body = ('<?xml version="1.0" encoding="UTF-8"?>\n<ListPartsResult>'
                        f"<Bucket>{request.scenario_name}</Bucket><Key>{escape(key)}</Key><UploadId>{upload_id}</UploadId>"
                        f"<PartNumberMarker>0</PartNumberMarker><MaxParts>1000</MaxParts><IsTruncated>false</IsTruncated>"
                        f"{items}</ListPartsResult>\n")
                return 200, xml, body.encode(), None
            if m == "POST" and upload_id is not None:
                with open(request.body_file or os.devnull, "rb") as f:
                    wanted = [int(n) for n in re.findall(rb"<PartNumber>\s*(\d+)\s*</PartNumber>", f.read())]
                if not wanted or wanted != sorted(set(wanted)) or \
                        not all(os.path.isfile(os.path.join(parts_dir, str(n))) for n in wanted):
                    return error(400, "InvalidPart", "One or more of the specified parts could not be found.")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path + ".assembling", "wb") as out:
                    for n in wanted:
                        with open(os.path.join(parts_dir, str(n)), "rb") as part:
                            shutil.copyfileobj(part, out)
                os.replace(path + ".assembling", path)
                shutil.rmtree(parts_dir)
                body = ('<?xml version="1.0" encoding="UTF-8"?>\n<CompleteMultipartUploadResult>'
                        f"<Bucket>{request.scenario_name}</Bucket><Key>{escape(key)}</Key>"
                        f'<ETag>"{file_md5(path)}-{len(wanted)}"</ETag></CompleteMultipartUploadResult>\n')
                return 200, xml, body.encode(), os.path.relpath(path, server.files)
            if m == "DELETE" and upload_id is not None:
                shutil.rmtree(parts_dir)
                return 204, [], b"", None
            if m == "PUT":
                os.makedirs(os.path.dirname(path), exist_ok=True)
                self._take_body(request, path)
                return 200, [("ETag", f'"{file_md5(path)}"')], b"", os.path.relpath(path, server.files)
            if m in ("GET", "HEAD"):
                if not os.path.isfile(path):
                    return error(404, "NoSuchKey", "The specified key does not exist.")
                with open(path, "rb") as f:
                    data = f.read()
                return 200, [("Content-Type", "application/octet-stream"), ("ETag", f'"{file_md5(path)}"')], data, None
            if m == "DELETE":
                if os.path.isfile(path):
                    os.unlink(path)
                return 204, [], b"", None
        return error(501, "NotImplemented", f"{m} is not implemented here")

    def _take_body(self, request: Request, target: str) -> None:
        if request.body_file:
            os.replace(request.body_file, target)
            request.body_file = None
        else:
            open(target, "wb").close()

    def method(self, scenario: Scenario, request: Request):
        """(status, headers, body, stored path) for a request whose body has been read."""
        server = self.server
        path = server.local_path(request)
        text = [("Content-Type", "text/plain")]
        if path is None:
            return 400, text, b"path leaves the scenario\n", None
        m = request.method
        rel = os.path.relpath(path, server.files)
        with server.fs_lock:
            if scenario.see_other and m == "GET" and request.rest.startswith("result/"):
                target = os.path.join(server.files, request.scenario_name, request.rest[len("result/"):])
                if not os.path.isfile(target):
                    return 404, text, b"nothing stored there\n", None
                with open(target, "rb") as f:
                    data = f.read()
                answer = {"stored": os.path.relpath(target, server.files), "size": len(data),
                          "sha256": hashlib.sha256(data).hexdigest()}
                return 200, [("Content-Type", "application/json")], (json.dumps(answer) + "\n").encode(), None
            if m in ("PUT", "POST"):
                folder = os.path.dirname(path)
                if os.path.isdir(path):
                    return 405, text, b"a folder is there\n", None
                if not os.path.isdir(folder):
                    if scenario.missing_folder is not None:
                        return scenario.missing_folder, text, b"the folder does not exist\n", None
                    os.makedirs(folder, exist_ok=True)
                existed = os.path.exists(path)
                if request.body_file:
                    os.replace(request.body_file, path)
                    request.body_file = None
                else:
                    open(path, "wb").close()
                location = "/" + quote(os.path.relpath(path, server.files))
                if scenario.see_other and m == "POST":
                    where = f"/{request.scenario_name}/result/{quote(os.path.relpath(path, os.path.join(server.files, request.scenario_name)))}"
                    return 303, [("Location", where)] + text, b"stored; see the result\n", rel
                return (204 if existed else 201), [("Location", location)] + text, b"" if existed else b"stored\n", rel
            if m in ("GET", "HEAD"):
                if not os.path.isfile(path):
                    return 404, text, b"not found\n", None
                with open(path, "rb") as f:
                    return 200, [("Content-Type", "application/octet-stream")], f.read(), None
            if m == "DELETE":
                if os.path.isfile(path):
                    os.unlink(path)
                    return 204, [], b"", None
                return 404, text, b"not found\n", None
            if m == "MKCOL":
                if os.path.exists(path):
                    return 405, text, b"something is there\n", None
                if not os.path.isdir(os.path.dirname(path)):
                    return 409, text, b"the parent folder does not exist\n", None
                os.mkdir(path)
                return 201, text, b"made\n", None
            if m == "PROPFIND":
                if not os.path.exists(path):
                    return 404, text, b"not found\n", None
                is_dir = os.path.isdir(path)
                href = quote(request.path.rstrip("/") + ("/" if is_dir else ""))
                kind = "<D:resourcetype><D:collection/></D:resourcetype>" if is_dir else \
                    f"<D:resourcetype/><D:getcontentlength>{os.path.getsize(path)}</D:getcontentlength>"
                xml = ('<?xml version="1.0" encoding="utf-8"?>\n<D:multistatus xmlns:D="DAV:"><D:response>'
                       f"<D:href>{href}</D:href><D:propstat><D:prop>{kind}</D:prop>"
                       "<D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>\n")
                return 207, [("Content-Type", 'application/xml; charset="utf-8"')], xml.encode(), None
            if m == "OPTIONS":
                return 200, [("DAV", "1, 2"), ("Allow", "OPTIONS, GET, HEAD, PUT, POST, DELETE, MKCOL, PROPFIND")], \
                    b"", None
        return 501, text, b"not implemented here\n", None


def file_md5(path: str) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def make_listener(server: Server, host: str, port: int, name: str) -> socketserver.ThreadingTCPServer:
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            Connection(server, self.request, name, self.server.server_address[1]).serve()

    class Listener(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True
        request_queue_size = 64

    return Listener((host, port), Handler)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (default)")
    parser.add_argument("--other-port", type=int, default=0, help="the other origin's port (0: any free one)")
    parser.add_argument("--dir", required=True, help="where files/ and requests.jsonl go (made if missing)")
    args = parser.parse_args()
    server = Server(args.dir, args.host)
    main_listener = make_listener(server, args.host, args.port, "main")
    other_listener = make_listener(server, args.host, args.other_port, "other")
    server.other_port = other_listener.server_address[1]
    threads = [threading.Thread(target=l.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
               for l in (main_listener, other_listener)]
    for thread in threads:
        thread.start()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    print(f"listening on http://{args.host}:{main_listener.server_address[1]} "
          f"other http://{args.host}:{server.other_port}", flush=True)
    while not done.wait(0.5):
        pass
    server.stopping.set()
    for listener in (main_listener, other_listener):
        listener.shutdown()
        listener.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
