#!/usr/bin/env python3
"""A hostile HTTP server for the security tests: it lies, redirects to another origin, never finishes.

    python3 contrib/test/hostile.py --mode MODE [MODE OPTIONS]

listens on two ports of 127.0.0.1, both picked by the kernel: the *main* one (the destination a test
uploads to) and the *other* one (same host, another port: another origin, where a well-behaved
client must never send its credentials). Once both listen it prints

    listening on MAIN other on OTHER

and serves until killed. Python 3.11 standard library only (http.server, threaded, HTTP/1.1
keep-alive, `Expect: 100-continue` answered); it only ever binds 127.0.0.1. Every answer carries a
Content-Length, except the endless one of `trickle`. Each request is logged on stderr, one line.

Every request on either port is recorded (the control requests below excepted):

    {"port_role": "main"|"other", "port": N, "t": UNIX_SECONDS, "method": "PUT", "path": "/x?y",
     "headers": {"Name": "value", ...}, "body_bytes": N}

Header names keep the case the client sent (compare them case-insensitively); a repeated header's
values are joined with ", ". `trickle` adds "trickle_chunks" (chunks sent so far) and "client_gone"
(when a write failed because the client hung up, else null). On either port:

    GET  /__requests    the JSON list of the records of both ports, oldest first
    POST /__reset       forget them (and the uploads the tus modes hold)

Modes (`--mode`). Unless a mode says otherwise, the other port answers any request 200 with `{}`.

  tus-bad-offset     a tus 1.0 server whose Upload-Offset answers are hostile. OPTIONS: 204 with
                     Tus-Resumable, Tus-Version 1.0.0, Tus-Extension creation,termination. POST (any
                     path): 201, Location http://127.0.0.1:MAIN/files/ID (ID: u1, u2, ...). HEAD
                     /files/ID: 200 with Upload-Offset and Upload-Length. PATCH /files/ID: 204 with
                     Upload-Offset. DELETE /files/ID: 204. An unknown ID: 404.
                       --offset VALUE    the Upload-Offset sent, verbatim (give it as --offset=-1 when
                                         it starts with '-'); `length` and `length+N` stand for the
                                         upload's Upload-Length (plus N). Default: length+1.
                       --offset-on LIST  which answers carry it, out of post,head,patch
                                         (default head,patch); the others carry the true offset.
                       --patch-conflict  every PATCH answers 409 (offset mismatch) and keeps
                                         nothing, while HEAD gives the true offset.
  tus-foreign-location
                     a working tus server on both ports (uploads shared between them), whose POST
                     answers 201 with Location http://127.0.0.1:OTHER/files/ID (ID: xyz, xyz-2, ...),
                     so a client that follows it PATCHes (and HEADs) the other origin, where it works.
                       --location TEMPLATE   the Location sent instead; {main}, {other} and {id} are
                                             replaced (e.g. "//127.0.0.1:{other}/files/{id}")
  post-foreign-url   main port: a multipart POST with no sequenceNo field, or a PUT, answers 200
                     {"url": URL}; a POST whose sequenceNo is 0 (the block protocol's init) answers
                     {"code":0,"data":{"upToken":"t1"}}, any other sequenceNo (a block)
                     {"code":0,"data":{"fileUrl":URL}}; anything else 200 {}. URL is
                     http://127.0.0.1:OTHER/admin/delete-everything. The other port answers anything
                     (DELETE included) 200 {"ok": true}.
                       --url TEMPLATE    URL instead; {main} and {other} are replaced
  trickle            any request but HEAD: read the whole body, answer `200 OK` with
                     Transfer-Encoding: chunked and no Content-Length, then one chunk every interval,
                     forever (until the client hangs up). HEAD: 200, Content-Length: 0.
                       --interval S      seconds between chunks (default 1.0)
                       --chunk-bytes N   bytes in each chunk (default 1)
  s3-endless-parts   an S3 endpoint (path style, signatures not checked) whose ListParts never ends.
                     POST ?uploads: 200 InitiateMultipartUploadResult with UploadId. PUT
                     ?partNumber=&uploadId=: --part-status (default 500, an S3 InternalError document,
                     so the client retries and resumes with ListParts; 200 answers an ETag). GET
                     ?uploadId= (ListParts): 200, IsTruncated true, NextPartNumberMarker =
                     part-number-marker + STEP, and the parts marker+1 ... marker+STEP (ETag
                     "etag-N", Size --part-size); STEP is --parts-per-page (1000 when that is 0),
                     whatever max-parts asked for. POST ?uploadId= (complete): 200
                     CompleteMultipartUploadResult. DELETE: 204. PUT without partNumber: 200 + ETag.
                     Anything else: 200, empty.
                       --upload-id ID         default hostile-upload-1
                       --parts-per-page N     parts listed per page (default 1000; 0: none, and the
                                              marker still grows by 1000)
                       --part-size BYTES      the Size of the listed parts (default 5242880)
                       --part-status CODE     the answer to UploadPart (default 500)
  escape-body        every request (any method, main port) answers --status (default 400) with a
                     text/plain body holding terminal escapes and C1 controls (ESCAPES below).
                       --status CODE
                       --json            the body is {"code": 1, "message": ESCAPES, "error": ESCAPES}
                                         (application/json; JSON escapes them as \\u001b, ...)

  slow-read          a server that reads request bodies a trickle at a time (an overloaded one, or
                     one holding a client's transfer slots on purpose): --read-bytes every
                     --read-interval seconds, through a receive buffer of 4 KiB, then 201 Created.
                     Any request without a body: 201.
                       --read-bytes N      bytes read each time (default 2048)
                       --read-interval S   seconds between reads (default 2.0)
                       --fail-after N      the first request with a body answers 503 with
                                           Retry-After: 5 (and closes the connection) once N bytes
                                           of it are read; later ones are read whole (default 0)

ESCAPES is "hostile: \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mRED\\x1b[0m \\u009b31mC1\\u009b0m end", UTF-8 encoded.
"""

import argparse
import json
import re
import signal
import socket
import socketserver
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.1"
MODES = ("tus-bad-offset", "tus-foreign-location", "post-foreign-url", "trickle", "s3-endless-parts", "escape-body",
         "slow-read")
TUS_EXTENSIONS = "creation,termination"
ESCAPES = "hostile: \x1b]0;pwned\x07\x1b[2J\x1b[31mRED\x1b[0m \u009b31mC1\u009b0m end"
S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
READ_SIZE = 64 * 1024


class State:
    """What both ports share: the records, the tus uploads, and the ports themselves."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.records = []
        self.uploads = {}  # tus: id -> {"length": int|None, "offset": int}
        self.created = 0
        self.ports = {"main": 0, "other": 0}

    def record(self, entry):
        with self.lock:
            self.records.append(entry)

    def snapshot(self):
        with self.lock:
            return json.dumps(self.records)

    def reset(self):
        with self.lock:
            self.records = []
            self.uploads = {}
            self.created = 0

    def new_upload(self, length, name):
        """A new tus upload, its id `name(N)` for the N-th upload created since the last reset."""
        with self.lock:
            self.created += 1
            upload_id = name(self.created)
            self.uploads[upload_id] = {"length": length, "offset": 0}
            return upload_id

    def upload(self, upload_id):
        with self.lock:
            return self.uploads.get(upload_id)


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a trickling answer must not keep the process alive

    def __init__(self, role, state):
        self.role = role
        self.state = state
        super().__init__((HOST, 0), Handler)

    def server_bind(self):
        if self.state.args.mode == "slow-read":
            # Accepted connections inherit it: the kernel then holds only a few KiB the server has
            # not read, and the client sees the server's pace, not the socket buffers'.
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        # HTTPServer's own looks the host's name up (getfqdn), which can hang where there is no DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hostile/1"
    sys_version = ""

    # ---- plumbing ----

    def version_string(self):
        return self.server_version

    def log_message(self, format, *args):
        sys.stderr.write(f"hostile [{self.server.role}] {format % args}\n")

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def read_body(self, keep):
        """Reads the request body (Content-Length or chunked); returns (bytes read, the bytes if keep)."""
        kept = []
        total = 0
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    self.close_connection = True
                    break
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                left = size
                while left:
                    data = self.rfile.read(min(left, READ_SIZE))
                    if not data:
                        self.close_connection = True
                        return total, b"".join(kept)
                    left -= len(data)
                    total += len(data)
                    if keep:
                        kept.append(data)
                self.rfile.readline(3)  # the CRLF after the chunk
        else:
            length = self.headers.get("Content-Length", "0").strip()
            left = int(length) if length.isdigit() else 0
            while left:
                data = self.rfile.read(min(left, READ_SIZE))
                if not data:
                    self.close_connection = True
                    break
                left -= len(data)
                total += len(data)
                if keep:
                    kept.append(data)
        return total, b"".join(kept)

    def answer(self, status, headers=(), body=b""):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)
        self.wfile.flush()

    def answer_json(self, status, value, headers=()):
        self.answer(status, [("Content-Type", "application/json"), *headers], json.dumps(value))

    # ---- dispatch ----

    def do_request(self):
        state = self.server.state
        bare = urllib.parse.urlsplit(self.path).path
        if bare in ("/__requests", "/__reset"):
            self.read_body(keep=False)
            if (self.command, bare) == ("GET", "/__requests"):
                self.answer(200, [("Content-Type", "application/json")], state.snapshot())
            elif (self.command, bare) == ("POST", "/__reset"):
                state.reset()
                self.answer_json(200, {"ok": True})
            else:
                self.answer_json(405, {"error": f"no {self.command} {bare}"})
            return
        mode = state.args.mode
        if mode == "slow-read" and self.server.role == "main":
            self.slow_read(state)
            return
        keep = mode == "post-foreign-url" and self.server.role == "main" and self.command == "POST"
        body_bytes, body = self.read_body(keep)
        role = self.server.role
        headers = {}
        for name, value in self.headers.items():
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        record = {"port_role": role, "port": self.server.server_address[1], "t": time.time(),
                  "method": self.command, "path": self.path, "headers": headers, "body_bytes": body_bytes}
        if mode == "trickle" and role == "main" and self.command != "HEAD":
            record["trickle_chunks"] = 0  # updated in place as the chunks go out
            record["client_gone"] = None
        state.record(record)
        if mode == "tus-bad-offset":
            if role == "main":
                self.tus(body_bytes, hostile=True)
            else:
                self.answer_json(200, {})
        elif mode == "tus-foreign-location":
            self.tus(body_bytes, hostile=False)
        elif mode == "post-foreign-url":
            self.post_foreign_url(body)
        elif mode == "trickle":
            if role == "main":
                self.trickle(record)
            else:
                self.answer_json(200, {})
        elif mode == "s3-endless-parts":
            if role == "main":
                self.s3()
            else:
                self.answer_json(200, {})
        elif mode == "escape-body":
            if role == "main":
                self.escape_body()
            else:
                self.answer_json(200, {})

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_request

    # ---- tus ----

    def tus(self, body_bytes, hostile):
        state = self.server.state
        args = state.args
        resumable = ("Tus-Resumable", "1.0.0")
        path = urllib.parse.urlsplit(self.path).path
        if self.command == "OPTIONS":
            self.answer(204, [resumable, ("Tus-Version", "1.0.0"), ("Tus-Extension", TUS_EXTENSIONS)])
            return

        def offset_value(upload, where, true_offset):
            if not hostile or where not in args.offset_on:
                return str(true_offset)
            text = args.offset
            if text == "length" or text.startswith("length+"):
                length = upload["length"] or 0
                return str(length + int(text[7:] or "0"))
            return text

        if self.command == "POST":
            length = self.headers.get("Upload-Length", "").strip()
            length = int(length) if length.isdigit() else None
            # tus-bad-offset: u1, u2, ...; tus-foreign-location: xyz, xyz-2, xyz-3, ...
            upload_id = state.new_upload(length, (lambda n: f"u{n}") if hostile else (
                lambda n: "xyz" if n == 1 else f"xyz-{n}"))
            upload = state.upload(upload_id)
            if self.headers.get("Content-Type", "") == "application/offset+octet-stream":
                upload["offset"] = body_bytes  # creation-with-upload (not advertised, but harmless)
            ports = state.ports
            if hostile:
                location = f"http://{HOST}:{ports['main']}/files/{upload_id}"
            else:
                location = args.location.format(main=ports["main"], other=ports["other"], id=upload_id)
            headers = [resumable, ("Location", location)]
            if hostile and "post" in args.offset_on:
                headers.append(("Upload-Offset", offset_value(upload, "post", upload["offset"])))
            self.answer(201, headers)
            return
        upload = state.upload(path.rstrip("/").rsplit("/", 1)[-1])
        if upload is None:
            self.answer(404, [resumable, ("Content-Type", "text/plain")], "no such upload\n")
            return
        if self.command == "HEAD":
            headers = [resumable, ("Cache-Control", "no-store"),
                       ("Upload-Offset", offset_value(upload, "head", upload["offset"]))]
            if upload["length"] is not None:
                headers.append(("Upload-Length", str(upload["length"])))
            self.answer(200, headers)
        elif self.command == "PATCH":
            if hostile and args.patch_conflict:
                self.answer(409, [resumable, ("Content-Type", "text/plain")], "offset mismatch\n")
                return
            claimed = self.headers.get("Upload-Offset", "").strip()
            if not hostile and claimed != str(upload["offset"]):
                self.answer(409, [resumable, ("Content-Type", "text/plain")],
                            f"offset mismatch: the upload is at {upload['offset']}\n")
                return
            if not hostile and upload["length"] is not None and upload["offset"] + body_bytes > upload["length"]:
                self.answer(400, [resumable, ("Content-Type", "text/plain")], "beyond Upload-Length\n")
                return
            upload["offset"] += body_bytes
            self.answer(204, [resumable, ("Upload-Offset", offset_value(upload, "patch", upload["offset"]))])
        elif self.command == "DELETE":
            with state.lock:
                state.uploads = {k: v for k, v in state.uploads.items() if v is not upload}
            self.answer(204, [resumable])
        else:
            self.answer(405, [resumable, ("Content-Type", "text/plain")], "method not allowed\n")

    # ---- post-foreign-url ----

    def slow_read(self, state):
        length = self.headers.get("Content-Length", "0").strip()
        left = int(length) if length.isdigit() else 0
        record = {"port_role": "main", "port": self.server.server_address[1], "t": time.time(),
                  "method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body_bytes": 0}
        state.record(record)
        if left and "100-continue" in self.headers.get("Expect", "").lower():
            self.send_response_only(100)
            self.end_headers()
        fail_after = 0
        if left and state.args.fail_after:
            with state.lock:
                fail_after, state.args.fail_after = state.args.fail_after, 0
        while left:
            time.sleep(state.args.read_interval)
            data = self.rfile.read(min(left, state.args.read_bytes))
            if not data:
                self.close_connection = True
                return
            left -= len(data)
            record["body_bytes"] += len(data)
            if fail_after and record["body_bytes"] >= fail_after:
                self.close_connection = True
                self.answer(503, [("Content-Type", "text/plain"), ("Retry-After", "5")], "failed on purpose\n")
                return
        self.answer(201, [("Content-Type", "text/plain")], "stored\n")

    def post_foreign_url(self, body):
        state = self.server.state
        if self.server.role == "other":
            self.answer_json(200, {"ok": True})
            return
        url = state.args.url.format(main=state.ports["main"], other=state.ports["other"])
        if self.command == "PUT":
            self.answer_json(200, {"url": url})
        elif self.command == "POST":
            sequence = form_field(self.headers.get("Content-Type", ""), body, "sequenceNo")
            if sequence is None:
                self.answer_json(200, {"url": url})
            elif sequence.strip() == "0":
                self.answer_json(200, {"code": 0, "data": {"upToken": "t1"}})
            else:
                self.answer_json(200, {"code": 0, "data": {"fileUrl": url}})
        else:
            self.answer_json(200, {})

    # ---- trickle ----

    def trickle(self, record):
        if self.command == "HEAD":
            self.answer(200)
            return
        args = self.server.state.args
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"%x\r\n%s\r\n" % (args.chunk_bytes, b"." * args.chunk_bytes)
        self.close_connection = True
        try:
            self.wfile.flush()
            while True:
                self.wfile.write(chunk)
                self.wfile.flush()
                record["trickle_chunks"] += 1
                time.sleep(args.interval)
        except (ConnectionError, OSError):
            record["client_gone"] = time.time()

    # ---- s3-endless-parts ----

    def s3(self):
        args = self.server.state.args
        split = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        segments = split.path.lstrip("/").split("/", 1)
        bucket, key = segments[0], urllib.parse.unquote(segments[1] if len(segments) > 1 else "")
        xml_head = '<?xml version="1.0" encoding="UTF-8"?>\n'
        xml = [("Content-Type", "application/xml")]
        upload_id = xml_escape(args.upload_id)
        if self.command == "POST" and "uploads" in query:
            self.answer(200, xml, f'{xml_head}<InitiateMultipartUploadResult xmlns="{S3_NS}"><Bucket>'
                        f"{xml_escape(bucket)}</Bucket><Key>{xml_escape(key)}</Key><UploadId>{upload_id}"
                        "</UploadId></InitiateMultipartUploadResult>")
        elif self.command == "PUT" and "partNumber" in query:
            number = query["partNumber"][0]
            if 200 <= args.part_status < 300:
                self.answer(args.part_status, [("ETag", f'"etag-{number}"')])
            else:
                self.answer(args.part_status, xml, f"{xml_head}<Error><Code>InternalError</Code><Message>hostile: "
                            f"part {xml_escape(number)} refused</Message></Error>")
        elif self.command == "GET" and "uploadId" in query:
            marker_text = query.get("part-number-marker", ["0"])[0]
            marker = int(marker_text) if marker_text.isdigit() else 0
            per_page = args.parts_per_page
            following = marker + (per_page or 1000)
            parts = "".join(
                f"<Part><PartNumber>{number}</PartNumber><LastModified>2024-01-01T00:00:00.000Z</LastModified>"
                f"<ETag>&quot;etag-{number}&quot;</ETag><Size>{args.part_size}</Size></Part>"
                for number in range(marker + 1, marker + per_page + 1))
            self.answer(200, xml, f'{xml_head}<ListPartsResult xmlns="{S3_NS}"><Bucket>{xml_escape(bucket)}</Bucket>'
                        f"<Key>{xml_escape(key)}</Key><UploadId>{upload_id}</UploadId>"
                        f"<PartNumberMarker>{marker}</PartNumberMarker>"
                        f"<NextPartNumberMarker>{following}</NextPartNumberMarker><MaxParts>{per_page or 1000}"
                        f"</MaxParts><IsTruncated>true</IsTruncated>{parts}</ListPartsResult>")
        elif self.command == "POST" and "uploadId" in query:
            self.answer(200, xml, f'{xml_head}<CompleteMultipartUploadResult xmlns="{S3_NS}"><Location>'
                        f"http://{HOST}:{self.server.state.ports['main']}/{xml_escape(bucket)}/{xml_escape(key)}"
                        f"</Location><Bucket>{xml_escape(bucket)}</Bucket><Key>{xml_escape(key)}</Key>"
                        '<ETag>&quot;etag-complete&quot;</ETag></CompleteMultipartUploadResult>')
        elif self.command == "DELETE":
            self.answer(204)
        elif self.command == "PUT":
            self.answer(200, [("ETag", '"etag-object"')])
        else:
            self.answer(200)

    # ---- escape-body ----

    def escape_body(self):
        args = self.server.state.args
        if args.json:
            self.answer_json(args.status, {"code": 1, "message": ESCAPES, "error": ESCAPES})
        else:
            self.answer(args.status, [("Content-Type", "text/plain; charset=utf-8")], ESCAPES + "\n")


def form_field(content_type, body, name):
    """The value of form field `name` in a multipart/form-data (or urlencoded) body, or None."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if "multipart/form-data" in content_type.lower() and match:
        delimiter = b"--" + match.group(1).encode("latin-1")
        for part in body.split(delimiter)[1:]:
            head, separator, value = part.partition(b"\r\n\r\n")
            if not separator:
                continue
            disposition = re.search(rb'(?im)^content-disposition:.*?[; ]name="([^"]*)"', head)
            if disposition and disposition.group(1) == name.encode():
                return value[:-2].decode("utf-8", "replace") if value.endswith(b"\r\n") else value.decode(
                    "utf-8", "replace")
        return None
    if "application/x-www-form-urlencoded" in content_type.lower():
        values = urllib.parse.parse_qs(body.decode("latin-1"), keep_blank_values=True).get(name)
        return values[0] if values else None
    return None


def xml_escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("'", "&apos;"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--offset", default="length+1", help="tus-bad-offset: the Upload-Offset sent, verbatim")
    parser.add_argument("--offset-on", default="head,patch",
                        help="tus-bad-offset: which answers lie, out of post,head,patch")
    parser.add_argument("--patch-conflict", action="store_true", help="tus-bad-offset: every PATCH answers 409")
    parser.add_argument("--location", default="http://127.0.0.1:{other}/files/{id}",
                        help="tus-foreign-location: the Location template")
    parser.add_argument("--url", default="http://127.0.0.1:{other}/admin/delete-everything",
                        help="post-foreign-url: the URL template")
    parser.add_argument("--interval", type=float, default=1.0, help="trickle: seconds between chunks")
    parser.add_argument("--chunk-bytes", type=int, default=1, help="trickle: bytes per chunk")
    parser.add_argument("--upload-id", default="hostile-upload-1", help="s3-endless-parts: the UploadId")
    parser.add_argument("--parts-per-page", type=int, default=1000, help="s3-endless-parts: parts per page")
    parser.add_argument("--part-size", type=int, default=5 << 20, help="s3-endless-parts: the listed Size")
    parser.add_argument("--part-status", type=int, default=500, help="s3-endless-parts: the UploadPart status")
    parser.add_argument("--status", type=int, default=400, help="escape-body: the status")
    parser.add_argument("--json", action="store_true", help="escape-body: a JSON body")
    parser.add_argument("--read-bytes", type=int, default=2048, help="slow-read: bytes read each time")
    parser.add_argument("--read-interval", type=float, default=2.0, help="slow-read: seconds between reads")
    parser.add_argument("--fail-after", type=int, default=0,
                        help="slow-read: the first request with a body answers 503 after this many bytes")
    args = parser.parse_args()
    args.offset_on = {word.strip().lower() for word in args.offset_on.split(",") if word.strip()}
    if not args.offset_on <= {"post", "head", "patch"}:
        parser.error(f"--offset-on takes post, head and patch, not {sorted(args.offset_on)}")
    if any(c in args.offset for c in "\r\n"):
        parser.error("--offset cannot hold a line break")
    if args.interval < 0 or args.chunk_bytes < 1 or args.parts_per_page < 0:
        parser.error("--interval must be >= 0, --chunk-bytes >= 1, --parts-per-page >= 0")
    # Whoever started us may have left SIGTERM blocked or ignored: make it end the server at once.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    state = State(args)
    main_server = Server("main", state)
    other_server = Server("other", state)
    state.ports = {"main": main_server.server_address[1], "other": other_server.server_address[1]}
    threading.Thread(target=other_server.serve_forever, daemon=True).start()
    print(f"listening on {state.ports['main']} other on {state.ports['other']}", flush=True)
    try:
        main_server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
