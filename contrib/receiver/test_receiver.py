"""Tests for the reference receiver (receiver.py), standard library only:

    python3 -m unittest contrib/receiver/test_receiver.py        (from the repository root)

Each test starts its own receiver on 127.0.0.1, port 0, in a fresh temp directory. RECEIVER_PY
names another receiver.py to test (e.g. an older version, to see which tests it fails).
"""
import http.client
import json
import os
import secrets
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import zlib
from pathlib import Path

RECEIVER = os.environ.get("RECEIVER_PY") or str(Path(__file__).resolve().with_name("receiver.py"))
HOST = "127.0.0.1"
MiB = 1 << 20
KEYS = ("blockSize", "totFileSize", "suffix")


def multipart(fields=(), files=(), boundary="uploadd-test-boundary-7c1e"):
    """(Content-Type, body) for text `fields` [(name, value)] and `files` [(name, filename, bytes)], in order."""
    out = b""
    for name, value in fields:
        out += part_head(name, boundary=boundary) + value.encode() + b"\r\n"
    for name, filename, data in files:
        out += part_head(name, filename, boundary=boundary) + data + b"\r\n"
    return f"multipart/form-data; boundary={boundary}", out + f"--{boundary}--\r\n".encode()


def part_head(name, filename=None, boundary="uploadd-test-boundary-7c1e"):
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
    ctype = "Content-Type: application/octet-stream\r\n" if filename is not None else ""
    return f"--{boundary}\r\nContent-Disposition: {disposition}\r\n{ctype}\r\n".encode()


def fields_part(fields, boundary="uploadd-test-boundary-7c1e"):
    return b"".join(part_head(n, boundary=boundary) + v.encode() + b"\r\n" for n, v in fields)


class Receiver:
    """receiver.py in its own process; stopped by stop()."""

    def __init__(self, directory, *args):
        self.dir = directory
        self.log = open(os.path.join(os.path.dirname(directory), "receiver.err"), "wb")
        self.proc = subprocess.Popen(
            [sys.executable, RECEIVER, "--host", HOST, "--port", "0", "--dir", directory, "--quiet", *args],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, bufsize=0)
        line = b""
        deadline = time.monotonic() + 10
        while not line.endswith(b"\n") and time.monotonic() < deadline:
            if select.select([self.proc.stdout], [], [], 0.1)[0]:
                byte = self.proc.stdout.read(1)
                if not byte:
                    break
                line += byte
        if not line.startswith(b"listening on http://"):
            self.stop()
            raise RuntimeError(f"receiver did not start: {line!r} {self.errors()}")
        self.port = int(line.strip().rsplit(b":", 1)[1])

    def errors(self):
        return Path(self.log.name).read_text(errors="replace")[-2000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()

    def peak_rss_mib(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM")


class ReceiverTestCase(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="receiver-test-")
        self.files = os.path.join(self.root, "files")
        os.mkdir(self.files)
        self.token = secrets.token_hex(16)
        self.auth = {"Authorization": f"Bearer {self.token}"}
        self.server = Receiver(self.files, "--token", self.token)
        self.open_sockets = []

    def tearDown(self):
        for s in self.open_sockets:
            s.close()
        self.server.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- plain requests ----
    def request(self, method, path, headers=None, body=b""):
        conn = http.client.HTTPConnection(HOST, self.server.port, timeout=20)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            data = response.read()
            return response.status, response.headers, data
        finally:
            conn.close()

    def post_form(self, path, fields=(), files=(), headers=None):
        ctype, body = multipart(fields, files)
        status, _, data = self.request("POST", path, {"Content-Type": ctype, **(headers or {})}, body)
        return status, (json.loads(data) if data else None)

    def init(self, block_size, total, suffix="bin"):
        status, answer = self.post_form("/upload", [("sequenceNo", "0"), ("blockSize", str(block_size)),
                                                    ("totFileSize", str(total)), ("suffix", suffix),
                                                    ("token", self.token)], [("block", "blob", b"")])
        self.assertEqual(status, 200, answer)
        return answer["data"]["upToken"]

    def block(self, up, seq, data, block_size, total, suffix="bin", token=None, headers=None):
        fields = [("sequenceNo", str(seq)), ("blockSize", str(block_size)), ("totFileSize", str(total)),
                  ("suffix", suffix), ("upToken", up), ("crc", f"{zlib.crc32(data):x}")]
        if token is not False:
            fields.insert(4, ("token", token or self.token))
        return self.post_form("/upload", fields, [("block", "blob", data)], headers)

    def upload(self, data, block_size, suffix="bin"):
        up = self.init(block_size, len(data), suffix)
        count = max(1, -(-len(data) // block_size))
        for i in range(count):
            status, answer = self.block(up, i + 1, data[i * block_size:(i + 1) * block_size], block_size, len(data), suffix)
            self.assertEqual(status, 200, answer)
        return up, answer

    def stats(self):
        status, _, data = self.request("GET", "/stats", self.auth)
        self.assertEqual(status, 200, data)
        return json.loads(data)

    # ---- streamed requests ----
    def connect(self):
        s = socket.create_connection((HOST, self.server.port), timeout=20)
        self.open_sockets.append(s)
        return s

    def stream(self, path, headers, prefix, data_len, give_up_after=16 * MiB, expect=False):
        """POST `prefix` then `data_len` zero bytes (the declared body), sending until an answer can be
        read or `give_up_after` bytes are out. (status or None, data bytes sent, socket)."""
        boundary_end = b"\r\n--uploadd-test-boundary-7c1e--\r\n"
        length = len(prefix) + data_len + len(boundary_end)
        head = f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {length}\r\n"
        head += "Content-Type: multipart/form-data; boundary=uploadd-test-boundary-7c1e\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        if expect:
            head += "Expect: 100-continue\r\n"
        s = self.connect()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)
        s.sendall(head.encode() + b"\r\n")
        if expect:
            return self.read_status(s), 0, s
        s.sendall(prefix)
        sent, chunk = 0, bytes(64 * 1024)
        s.setblocking(False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            can_send = sent < min(data_len, give_up_after)
            readable, writable, _ = select.select([s], [s] if can_send else [], [], 1)
            if readable:
                break
            if writable:
                try:
                    sent += s.send(chunk[:min(len(chunk), data_len - sent)])
                except (BrokenPipeError, ConnectionResetError):
                    break
            elif not can_send:
                return None, sent, s  # all sent, or gave up, and no answer for a second
        return self.read_status(s), sent, s

    @staticmethod
    def read_status(s):
        s.setblocking(True)
        s.settimeout(10)
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                data = s.recv(65536)
                if not data:
                    break
                answer += data
        except (TimeoutError, ConnectionResetError):
            pass
        if not answer.startswith(b"HTTP/1."):
            return None
        return int(answer.split(b" ", 2)[1])

    @staticmethod
    def sent_until_closed(s, limit=64 * MiB):
        """Keep sending on `s` after the answer; the bytes sent before the receiver closed it (or `limit`)."""
        s.setblocking(False)
        sent, chunk = 0, bytes(64 * 1024)
        deadline = time.monotonic() + 30
        while sent < limit and time.monotonic() < deadline:
            readable, writable, _ = select.select([s], [s], [], 1)
            try:
                if readable and not s.recv(65536):
                    return sent
                if writable:
                    sent += s.send(chunk)
            except (BrokenPipeError, ConnectionResetError):
                return sent
        return sent

    def landed(self):
        """Files that hold request bytes: block and temp files anywhere, any top-level file."""
        found = []
        for where, _, names in os.walk(self.files):
            for name in names:
                if name != "meta.json":
                    found.append(os.path.relpath(os.path.join(where, name), self.files))
        return found


class TokenTests(ReceiverTestCase):
    def test_every_endpoint_refuses_a_missing_or_wrong_token(self):
        victim = os.path.join(self.files, "victim.txt")
        Path(victim).write_bytes(b"someone else's file")
        os.chmod(victim, 0o600)
        self.request("GET", "/stats", self.auth)  # something for an unauthorized reset to zero
        init = multipart([("sequenceNo", "0"), ("blockSize", "16"), ("totFileSize", "16"), ("suffix", "bin")],
                         [("block", "blob", b"")])
        form = multipart([("a", "b")], [("file", "new.txt", b"data")])
        wrongs = [{}, {"Authorization": "Bearer wrong"}, {"X-Upload-Token": "wrong"},
                  {"Authorization": f"Basic {self.token}"}, {"Authorization": f"Bearer {self.token}x"}]
        for method, path, body in [("POST", "/upload", init), ("POST", "/form", form), ("GET", "/files/victim.txt", None),
                                   ("HEAD", "/files/victim.txt", None), ("DELETE", "/files/victim.txt", None),
                                   ("GET", "/stats", None), ("POST", "/stats/reset", None), ("GET", "/nothing-here", None)]:
            for headers in wrongs:
                with self.subTest(method=method, path=path, headers=headers):
                    ctype, data = body or ("text/plain", b"")
                    status, _, answer = self.request(method, path, {"Content-Type": ctype, **headers}, data)
                    self.assertEqual(status, 401, answer)
        for path in ("/upload", "/form"):  # a wrong `token` field
            with self.subTest(path=path, field="token=wrong"):
                fields = [("sequenceNo", "0"), ("blockSize", "16"), ("totFileSize", "16"), ("suffix", "bin"),
                          ("token", "wrong")]
                status, answer = self.post_form(path, fields, [("block" if path == "/upload" else "file", "new.txt", b"x")])
                self.assertEqual(status, 401, answer)
        self.assertEqual(Path(victim).read_bytes(), b"someone else's file", "the file was changed")
        self.assertEqual(self.landed(), ["victim.txt"], "a request without the token stored something")
        self.assertEqual(os.listdir(os.path.join(self.files, ".uploads")), [], "an upload was begun without the token")
        self.assertGreater(self.stats()["requests"], 1, "POST /stats/reset without the token zeroed the counters")

    def test_the_right_token_opens_every_endpoint(self):
        data = os.urandom(2 * MiB + 5)
        up = self.init(MiB, len(data), "mp4")
        blocks = [data[i * MiB:(i + 1) * MiB] for i in range(3)]
        # Any order, a block twice, the token as a field, a header, or both.
        for seq, headers, token in [(3, {}, None), (1, self.auth, False), (1, {"X-Upload-Token": self.token}, False)]:
            status, answer = self.block(up, seq, blocks[seq - 1], MiB, len(data), "mp4", token=token, headers=headers)
            self.assertEqual((status, answer["data"]), (200, {"sequenceNo": seq}))
        status, answer = self.block(up, 2, blocks[1], MiB, len(data), "mp4", headers=self.auth)
        self.assertEqual(status, 200, answer)
        url = answer["data"]["fileUrl"]
        self.assertEqual(url, f"http://{HOST}:{self.server.port}/files/{up}.mp4")
        status, answer = self.block(up, 1, blocks[0], MiB, len(data), "mp4")  # after the end: fileUrl again
        self.assertEqual((status, answer["data"]), (200, {"fileUrl": url}))
        status, headers, got = self.request("GET", f"/files/{up}.mp4", self.auth)
        self.assertEqual((status, got), (200, data))
        status, headers, _ = self.request("HEAD", f"/files/{up}.mp4", {"X-Upload-Token": self.token})
        self.assertEqual((status, headers["Content-Length"]), (200, str(len(data))))
        stats = self.stats()
        self.assertEqual((stats["blocks_received"], stats["duplicate_blocks"], stats["block_bytes_received"]),
                         (5, 2, len(data) + 2 * MiB))
        status, answer = self.post_form("/form", [("album", "x"), ("token", self.token)], [("file", "f.txt", b"hello")])
        self.assertEqual(status, 201, answer)
        self.assertEqual((answer["fields"], answer["size"]), ({"album": "x"}, 5), "the token is not echoed")
        status, answer = self.post_form("/form", [], [("file", "g.txt", b"hi")], self.auth)
        self.assertEqual(status, 201, answer)
        self.assertEqual(self.request("DELETE", "/files/g.txt", self.auth)[0], 204)
        self.assertEqual(self.request("GET", "/files/g.txt", self.auth)[0], 404)
        self.assertEqual(self.request("POST", "/stats/reset", self.auth)[0], 200)
        self.assertEqual(self.stats()["blocks_received"], 0)
        self.assertEqual(self.request("GET", "/nothing-here", self.auth)[0], 404)
        # Errors of the protocol stay what they were.
        up2 = self.init(16, 20)
        self.assertEqual(self.block(up2, 1, b"y" * 15, 16, 20)[0], 400)  # short block
        self.assertEqual(self.block("0" * 32, 1, b"y" * 16, 16, 20)[0], 404)
        self.assertEqual(self.block(up2, 3, b"y" * 4, 16, 20)[0], 400)  # out of range
        fields = [("sequenceNo", "1"), ("token", self.token), ("upToken", up2), ("crc", "0")]
        self.assertEqual(self.post_form("/upload", fields, [("block", "b", b"z" * 16)])[0], 400)  # crc mismatch

    def test_a_token_is_mandatory_unless_insecure_no_token_is_given(self):
        proc = subprocess.Popen([sys.executable, RECEIVER, "--host", HOST, "--port", "0", "--dir", self.files],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            _, errors = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail("the receiver started without a token")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("token", errors)
        insecure = Receiver(os.path.join(self.root, "files"), "--insecure-no-token")
        try:
            conn = http.client.HTTPConnection(HOST, insecure.port, timeout=10)
            conn.request("GET", "/stats")
            self.assertEqual(conn.getresponse().status, 200)
            conn.close()
        finally:
            insecure.stop()
        token_file = Path(self.root, "token")
        token_file.write_text(self.token + "\n")
        from_file = Receiver(os.path.join(self.root, "files"), "--token-file", str(token_file))
        try:
            for headers, want in (({}, 401), (self.auth, 200)):
                conn = http.client.HTTPConnection(HOST, from_file.port, timeout=10)
                conn.request("GET", "/stats", headers=headers)
                self.assertEqual(conn.getresponse().status, want)
                conn.close()
        finally:
            from_file.stop()

    def test_the_token_field_must_come_before_the_file_part(self):
        up = self.init(16, 16)
        fields = [("sequenceNo", "1"), ("blockSize", "16"), ("totFileSize", "16"), ("suffix", "bin"), ("upToken", up),
                  ("crc", f"{zlib.crc32(b'a' * 16):x}")]
        ctype, body = multipart(fields, [("block", "blob", b"a" * 16)])
        body = body[:-len(b"--uploadd-test-boundary-7c1e--\r\n")] + fields_part([("token", self.token)]) \
            + b"--uploadd-test-boundary-7c1e--\r\n"
        status, _, answer = self.request("POST", "/upload", {"Content-Type": ctype}, body)
        self.assertEqual(status, 401, answer)
        self.assertEqual(self.landed(), [])


class EarlyRefusalTests(ReceiverTestCase):
    """Refusals come before the body is read: the block never lands, the connection closes soon after."""

    def expect_early(self, status, sent, s, want):
        landed = self.landed()
        self.assertEqual(status, want, f"no {want} before {sent} bytes of the block were sent; on disk: {landed}")
        self.assertLess(sent, 16 * MiB)
        self.assertEqual(landed, [], "block bytes landed on disk")
        more = self.sent_until_closed(s)
        self.assertLess(more, 48 * MiB, "the receiver kept reading the body after its answer")
        self.assertLess(self.server.peak_rss_mib(), 100)

    def block_prefix(self, up, token, block_size=64 * MiB, total=64 * MiB):
        fields = [("sequenceNo", "1"), ("blockSize", str(block_size)), ("totFileSize", str(total)), ("suffix", "bin")]
        fields += [("token", token)] if token is not None else []
        fields += [("upToken", up), ("crc", "0")]
        return fields_part(fields) + part_head("block", "blob")

    def test_a_wrong_token_field_stops_a_big_block_before_it_lands(self):
        up = self.init(64 * MiB, 64 * MiB)
        self.expect_early(*self.stream("/upload", {}, self.block_prefix(up, "wrong"), 64 * MiB), want=401)

    def test_a_missing_token_stops_a_big_block_before_it_lands(self):
        up = self.init(64 * MiB, 64 * MiB)
        self.expect_early(*self.stream("/upload", {}, self.block_prefix(up, None), 64 * MiB), want=401)

    def test_a_wrong_token_header_is_refused_before_the_body(self):
        up = self.init(64 * MiB, 64 * MiB)
        for headers in ({"Authorization": "Bearer wrong"}, {"X-Upload-Token": "wrong"}):
            with self.subTest(headers=headers):
                self.expect_early(*self.stream("/upload", headers, self.block_prefix(up, None), 64 * MiB), want=401)
                status, _, s = self.stream("/upload", headers, b"", 64 * MiB, expect=True)
                self.assertEqual(status, 401, "100 Continue (or nothing) for a wrong token header")
        status, _, s = self.stream("/form", {}, b"", 64 * MiB, expect=True)
        self.assertEqual(status, 100, "no header token on /form: the field may still carry it")

    def test_a_wrong_token_field_on_form_stops_the_file(self):
        prefix = fields_part([("token", "wrong")]) + part_head("file", "big.bin")
        self.expect_early(*self.stream("/form", {}, prefix, 64 * MiB), want=401)
        prefix = fields_part([("a", "b")]) + part_head("file", "big.bin")
        self.expect_early(*self.stream("/form", {}, prefix, 64 * MiB), want=401)

    def test_an_unknown_upToken_is_refused_before_the_block_lands(self):
        self.expect_early(*self.stream("/upload", {}, self.block_prefix("ab" * 16, self.token), 64 * MiB), want=404)

    def test_a_block_longer_than_its_size_is_refused_as_it_arrives(self):
        up = self.init(MiB, 2 * MiB)
        prefix = self.block_prefix(up, self.token, MiB, 2 * MiB)
        status, sent, s = self.stream("/upload", {}, prefix, 64 * MiB)
        self.assertEqual(status, 400, f"no answer before {sent} bytes were sent")
        self.assertLess(sent, 16 * MiB)
        self.assertLess(self.sent_until_closed(s), 48 * MiB)
        self.assertEqual([n for n in self.landed() if "block-" in n], [], "the long block was kept")

    def test_a_body_over_the_limit_is_refused_before_it_is_read(self):
        for path in ("/upload", "/form"):
            with self.subTest(path=path):
                s = self.connect()
                s.sendall(f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {100 << 30}\r\n"
                          f"Authorization: Bearer {self.token}\r\n"
                          "Content-Type: multipart/form-data; boundary=b\r\n\r\n".encode())
                self.assertEqual(self.read_status(s), 413)
        status, answer = self.post_form("/upload", [("sequenceNo", "0"), ("blockSize", str(1 << 30)),
                                                    ("totFileSize", "1"), ("suffix", ""), ("token", self.token)],
                                        [("block", "b", b"")])
        self.assertEqual(status, 413, f"a 1 GiB blockSize: {answer}")


class FieldLimitTests(ReceiverTestCase):
    def test_too_many_fields_are_refused(self):
        fields = [("sequenceNo", "0"), ("blockSize", "16"), ("totFileSize", "16"), ("suffix", "bin"),
                  ("token", self.token)] + [(f"extra{i}", "x") for i in range(100)]
        status, answer = self.post_form("/upload", fields, [("block", "blob", b"")])
        self.assertEqual(status, 413, answer)
        status, answer = self.post_form("/form", fields, [("file", "f.txt", b"x")])
        self.assertEqual(status, 413, answer)
        status, answer = self.post_form("/form", [("big", "x" * (100 * 1024))], [("file", "f.txt", b"x")], self.auth)
        self.assertEqual(status, 413, answer)
        self.assertEqual(self.landed(), [])

    def test_a_body_of_fields_does_not_fill_memory(self):
        # 1500 fields of 60 KiB with distinct names: 90 MB, with the right token.
        value, closing = "v" * (60 * 1024), b"--uploadd-test-boundary-7c1e--\r\n"
        parts = (fields_part([(f"f{i:04d}", value)]) for i in range(1500))
        prefix = fields_part([("token", self.token), ("sequenceNo", "0")])
        total = 1500 * len(fields_part([("f0000", value)])) + len(closing)
        s = self.connect()
        s.sendall(f"POST /upload HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {len(prefix) + total}\r\n"
                  "Content-Type: multipart/form-data; boundary=uploadd-test-boundary-7c1e\r\n\r\n".encode() + prefix)
        s.setblocking(False)
        sent, pending = 0, b""
        deadline = time.monotonic() + 60
        while sent < total and time.monotonic() < deadline:
            readable, writable, _ = select.select([s], [s], [], 1)
            if readable:
                break
            if writable:
                while len(pending) < 1 << 20 and (more := next(parts, None)) is not None:
                    pending += more
                if len(pending) < 1 << 20:
                    pending += closing
                    closing = b""
                try:
                    n = s.send(pending[:1 << 20])
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent, pending = sent + n, pending[n:]
        status = self.read_status(s)
        self.assertLess(self.server.peak_rss_mib(), 100, "the fields were kept in memory")
        self.assertEqual(status, 413)
        self.assertLess(sent, 32 * MiB)


class StorageTests(ReceiverTestCase):
    def test_stored_files_are_private(self):
        up, answer = self.upload(os.urandom(100_000), 64 * 1024)
        chunked = os.path.join(self.files, f"{up}.bin")
        status, _ = self.post_form("/form", [], [("file", "form.txt", b"form data")], self.auth)
        self.assertEqual(status, 201)
        for path in (chunked, os.path.join(self.files, "form.txt")):
            with self.subTest(path=os.path.basename(path)):
                self.assertIn(stat.S_IMODE(os.stat(path).st_mode), (0o600, 0o640))

    def test_form_never_overwrites_a_file(self):
        status, first = self.post_form("/form", [], [("file", "a.txt", b"first")], self.auth)
        self.assertEqual(status, 201)
        status, answer = self.post_form("/form", [], [("file", "a.txt", b"second")], self.auth)
        self.assertEqual(status, 409, answer)
        self.assertEqual(Path(self.files, "a.txt").read_bytes(), b"first")
        status, again = self.post_form("/form", [], [("file", "a.txt", b"first")], self.auth)  # a retry
        self.assertEqual((status, again["url"], again["sha256"]), (200, first["url"], first["sha256"]))
        Path(self.files, "mine.txt").write_bytes(b"put there by hand")
        status, _ = self.post_form("/form", [], [("file", "mine.txt", b"other")], self.auth)
        self.assertEqual(status, 409)
        self.assertEqual(Path(self.files, "mine.txt").read_bytes(), b"put there by hand")
        victim = Path(self.root, "victim")
        victim.write_bytes(b"victim")
        os.symlink(victim, os.path.join(self.files, "link.txt"))
        status, _ = self.post_form("/form", [], [("file", "link.txt", b"through the link")], self.auth)
        self.assertEqual(status, 409)
        self.assertEqual(victim.read_bytes(), b"victim")
        self.assertTrue(os.path.islink(os.path.join(self.files, "link.txt")))
        self.assertEqual([n for n in os.listdir(self.files) if n.startswith(".tmp")], [], "temp files left")

    def test_stitching_does_not_use_a_predictable_temp_name(self):
        data = os.urandom(300_000)
        up = self.init(100_000, len(data))
        victim = Path(self.root, "victim")
        victim.write_bytes(b"victim")
        for name in (f".tmp-{up}.bin", f".tmp-{up}", f".{up}.bin.tmp", f"{up}.bin.tmp"):
            os.symlink(victim, os.path.join(self.files, name))
        for i in range(3):
            status, answer = self.block(up, i + 1, data[i * 100_000:(i + 1) * 100_000], 100_000, len(data))
            self.assertEqual(status, 200, answer)
        self.assertEqual(victim.read_bytes(), b"victim", "the planted temp name was written through")
        stored = os.path.join(self.files, f"{up}.bin")
        self.assertFalse(os.path.islink(stored))
        self.assertEqual(Path(stored).read_bytes(), data)


class ConnectionLimitTests(ReceiverTestCase):
    def test_the_connection_cap_holds(self):
        idle = [self.connect() for _ in range(32)]
        probe = {"Authorization": f"Bearer {self.token}"}
        s = self.connect()
        s.sendall(f"GET /stats HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {probe['Authorization']}\r\n\r\n".encode())
        self.assertEqual(self.read_status(s), 503, "a 33rd connection was served")
        for c in idle[:4]:
            c.close()
        deadline, status = time.monotonic() + 10, None
        while time.monotonic() < deadline and status != 200:
            status = self.request("GET", "/stats", probe)[0]
            time.sleep(0.05)
        self.assertEqual(status, 200, "a closed connection did not free its place")


if __name__ == "__main__":
    unittest.main()
