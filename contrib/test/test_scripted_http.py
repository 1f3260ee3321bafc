#!/usr/bin/env python3
"""Tests of contrib/test/scripted_http.py, against the real server in a process of its own.

    python3 contrib/test/test_scripted_http.py -v

Requests go through http.client, except where http.client cannot say what is tested (waiting for
100 Continue, reading an answer before the whole body is sent): there a raw socket speaks HTTP.
"""

import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "scripted_http.py"


class ScriptedHTTPTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = Path(tempfile.mkdtemp(prefix="scripted-http-test-"))
        cls.proc = subprocess.Popen([sys.executable, str(SCRIPT), "--host", "127.0.0.1", "--port", "0",
                                     "--other-port", "0", "--dir", str(cls.dir)],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = cls.proc.stdout.readline()
        match = re.match(r"listening on http://127\.0\.0\.1:(\d+) other http://127\.0\.0\.1:(\d+)$", line.strip())
        if not match:
            cls.proc.kill()
            raise RuntimeError(f"scripted_http.py said {line!r}")
        cls.port, cls.other_port = int(match[1]), int(match[2])

    @classmethod
    def tearDownClass(cls):
        cls.proc.send_signal(signal.SIGTERM)
        try:
            cls.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cls.proc.kill()
            cls.proc.wait()
        cls.proc.stdout.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    # ---- helpers --------------------------------------------------------------------------------
    def request(self, method, path, body=None, headers=None, port=None):
        """(status, headers, body, the http.client response) over a fresh connection."""
        conn = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            data = response.read()
            return response.status, response.headers, data, response
        finally:
            conn.close()

    def raw(self, data: bytes, port=None) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", port or self.port), timeout=10)
        sock.sendall(data)
        return sock

    def read_head(self, sock: socket.socket, timeout=10.0) -> bytes:
        sock.settimeout(timeout)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data

    def log(self):
        path = self.dir / "requests.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def last_log(self, target):
        for _ in range(50):
            found = [r for r in self.log() if r["target"] == target]
            if found:
                return found[-1]
            time.sleep(0.05)
        self.fail(f"no log line for {target}")

    def stored(self, *parts) -> Path:
        return self.dir.joinpath("files", *parts)

    # ---- the plain server -----------------------------------------------------------------------
    def test_store_put_get_delete_and_log(self):
        body = os.urandom(100_000)
        status, headers, _, _ = self.request("PUT", "/store/t1/a/b.bin", body)
        self.assertEqual(status, 201)
        self.assertEqual(headers["Location"], "/store/t1/a/b.bin")
        self.assertEqual(self.stored("store", "t1", "a", "b.bin").read_bytes(), body)
        record = self.last_log("/store/t1/a/b.bin")
        self.assertEqual((record["method"], record["status"], record["body_length"]), ("PUT", 201, len(body)))
        self.assertEqual(record["sha256"], hashlib.sha256(body).hexdigest())
        self.assertEqual(record["stored"], "store/t1/a/b.bin")
        self.assertIn(["Content-Length", str(len(body))], record["headers"])
        self.assertEqual(self.request("PUT", "/store/t1/a/b.bin", b"again")[0], 204)
        self.assertEqual(self.request("GET", "/store/t1/a/b.bin")[2], b"again")
        self.assertEqual(self.request("DELETE", "/store/t1/a/b.bin")[0], 204)
        self.assertEqual(self.request("GET", "/store/t1/a/b.bin")[0], 404)

    def test_keep_alive_and_chunked_bodies(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for i in range(3):
                conn.request("PUT", f"/no-continue/t2/{i}", body=iter([b"abc", b"defg"]))
                response = conn.getresponse()
                response.read()
                self.assertEqual(response.status, 201)
                self.assertEqual(response.version, 11)
                self.assertNotEqual(response.headers.get("Connection"), "close")
        finally:
            conn.close()
        self.assertEqual(self.stored("no-continue", "t2", "2").read_bytes(), b"abcdefg")
        self.assertEqual(self.last_log("/no-continue/t2/2")["body_length"], 7)

    def test_unknown_scenario_is_404(self):
        self.assertEqual(self.request("PUT", "/no-such-thing/f", b"x")[0], 404)

    def test_path_cannot_leave_its_scenario(self):
        self.assertEqual(self.request("PUT", "/store/../../escape", b"x")[0], 400)
        self.assertFalse((self.dir.parent / "escape").exists())

    # ---- Expect: 100-continue -----------------------------------------------------------------
    def test_store_sends_100_continue(self):
        sock = self.raw(b"PUT /store/t3 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        try:
            self.assertTrue(self.read_head(sock).startswith(b"HTTP/1.1 100 Continue\r\n"))
            sock.sendall(b"hello")
            self.assertTrue(self.read_head(sock).startswith(b"HTTP/1.1 201 "))
        finally:
            sock.close()

    def test_no_continue_never_sends_100(self):
        sock = self.raw(b"PUT /no-continue/t4 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        b"Expect: 100-continue\r\n\r\n")
        try:
            sock.settimeout(1.0)
            with self.assertRaises(socket.timeout):
                sock.recv(100)  # nothing comes: no 100 Continue
            sock.sendall(b"hello")
            self.assertTrue(self.read_head(sock).startswith(b"HTTP/1.1 201 "))
        finally:
            sock.close()
        self.assertEqual(self.stored("no-continue", "t4").read_bytes(), b"hello")

    def test_expect_417_then_201_without_expect(self):
        sock = self.raw(b"PUT /expect-417/t5 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        b"Expect: 100-continue\r\n\r\n")
        try:
            head = self.read_head(sock)
            self.assertTrue(head.startswith(b"HTTP/1.1 417 Expectation Failed\r\n"), head)
            self.assertIn(b"Connection: close", head)
        finally:
            sock.close()
        self.assertFalse(self.last_log("/expect-417/t5")["body_read"])
        self.assertEqual(self.request("PUT", "/expect-417/t5", b"hello")[0], 201)
        self.assertEqual(self.stored("expect-417", "t5").read_bytes(), b"hello")

    # ---- redirects ----------------------------------------------------------------------------
    def test_see_other_after_post(self):
        status, headers, _, _ = self.request("POST", "/see-other/t6/form", b"field=1")
        self.assertEqual(status, 303)
        self.assertEqual(headers["Location"], "/see-other/result/t6/form")
        status, _, body, _ = self.request("GET", headers["Location"])
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body), {"stored": "see-other/t6/form", "size": 7,
                                            "sha256": hashlib.sha256(b"field=1").hexdigest()})

    def test_same_origin_307_and_308(self):
        for code in (307, 308):
            status, headers, _, _ = self.request("PUT", f"/redirect-{code}/t7/{code}", b"body")
            self.assertEqual(status, code)
            self.assertEqual(headers["Location"], f"/store/t7/{code}")
            self.assertTrue(self.last_log(f"/redirect-{code}/t7/{code}")["body_read"])
            self.assertEqual(self.request("PUT", headers["Location"], b"body")[0], 201)

    def test_redirect_before_the_body_when_the_client_waits(self):
        sock = self.raw(b"PUT /redirect-307/t8 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        b"Expect: 100-continue\r\n\r\n")
        try:
            head = self.read_head(sock)
            self.assertTrue(head.startswith(b"HTTP/1.1 307 "), head)
            self.assertIn(b"Location: /store/t8\r\n", head)
        finally:
            sock.close()

    def test_cross_origin_307_to_the_other_port(self):
        status, headers, _, _ = self.request("PUT", "/cross-307/t9/f", b"body")
        self.assertEqual(status, 307)
        self.assertEqual(headers["Location"], f"http://127.0.0.1:{self.other_port}/store/t9/f")
        self.assertEqual(self.request("PUT", "/store/t9/f", b"body", port=self.other_port)[0], 201)
        self.assertEqual(self.last_log("/store/t9/f")["listener"], "other")

    # ---- missing folders ------------------------------------------------------------------------
    def test_missing_folder_statuses_then_mkcol(self):
        for code in (404, 409, 424, 500):
            base = f"/missing-{code}/t10"
            self.assertEqual(self.request("PROPFIND", f"{base}/", headers={"Depth": "0"})[0], 404)
            self.assertEqual(self.request("PUT", f"{base}/f", b"x")[0], code)
            self.assertFalse(self.stored(f"missing-{code}", "t10").exists())
            self.assertEqual(self.request("MKCOL", f"{base}/a/")[0], 409)  # one folder at a time
            self.assertEqual(self.request("MKCOL", f"{base}/")[0], 201)
            self.assertEqual(self.request("MKCOL", f"{base}/")[0], 405)
            status, _, body, _ = self.request("PROPFIND", f"{base}/", headers={"Depth": "0"})
            self.assertEqual(status, 207)
            self.assertIn(b"<D:collection/>", body)
            self.assertEqual(self.request("PUT", f"{base}/f", b"x")[0], 201)
            self.assertEqual(self.stored(f"missing-{code}", "t10", "f").read_bytes(), b"x")

    def test_missing_424_reason(self):
        _, _, _, response = self.request("PUT", "/missing-424/t11/none/f", b"x")
        self.assertEqual((response.status, response.reason), (424, "Failed Dependency"))

    # ---- body limits ------------------------------------------------------------------------------
    def test_413_over_a_megabyte_before_the_body(self):
        sock = self.raw(b"PUT /too-large-413/t12 HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n")
        try:
            head = self.read_head(sock)  # answered from Content-Length, no byte of the body sent
            self.assertTrue(head.startswith(b"HTTP/1.1 413 Request Entity Too Large\r\n"), head)
            self.assertIn(b"Connection: close", head)
        finally:
            sock.close()
        self.assertEqual(self.request("PUT", "/too-large-413/t12", b"x" * (1 << 20))[0], 201)
        self.assertEqual(self.request("PUT", "/too-large-413/t12?limit=10", b"x" * 11)[0], 413)

    def test_413_for_a_chunked_body(self):
        def chunks():
            for _ in range(40):
                yield b"x" * 65536
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            try:
                conn.request("PUT", "/too-large-413/t13", body=chunks())
            except (BrokenPipeError, ConnectionResetError):
                pass  # the answer came first; it is still there to read
            response = conn.getresponse()
            self.assertEqual(response.status, 413)
        finally:
            conn.close()

    def test_400_request_data_too_big(self):
        status, _, body, _ = self.request("POST", "/too-large-400/t14", b"x" * (3 << 20))
        self.assertEqual(status, 400)
        self.assertIn(b"RequestDataTooBig", body)
        self.assertEqual(self.request("POST", "/too-large-400/t14", b"x" * (2 << 20))[0], 201)

    # ---- endless OPTIONS ----------------------------------------------------------------------------
    def test_options_body_never_ends(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("OPTIONS", "/endless-options/missing/path")
            response = conn.getresponse()
            self.assertEqual(response.status, 200)
            self.assertEqual(response.headers["DAV"], "1, 2")
            self.assertEqual(response.headers["Transfer-Encoding"], "chunked")
            started = time.monotonic()
            got = b""
            while time.monotonic() - started < 1.0:
                got += response.read(1)
            self.assertGreaterEqual(len(got), 3)  # still coming after a second
            self.assertFalse(response.isclosed())
        finally:
            conn.close()
        # Other methods follow WebDAV's folder rules (409 into a missing folder).
        self.assertEqual(self.request("PUT", "/endless-options/missing/path", b"x")[0], 409)

    # ---- HTTP/1.0 and Connection: close --------------------------------------------------------------
    def test_http10_answers_and_closes(self):
        _, _, _, response = self.request("PUT", "/http10/t15", b"x")
        self.assertEqual((response.version, response.status), (10, 201))
        self.assertEqual(response.headers["Connection"], "close")
        sock = self.raw(b"PUT /http10/t15b HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"
                        b"GET /http10/t15b HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            sock.settimeout(5)
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        finally:
            sock.close()
        self.assertTrue(data.startswith(b"HTTP/1.0 201 "))
        self.assertEqual(data.count(b"HTTP/1."), 1)  # closed after the first answer

    def test_close_after_each_answer(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("PUT", "/close/t16", body=b"x")
            response = conn.getresponse()
            response.read()
            self.assertEqual((response.version, response.status), (11, 201))
            self.assertEqual(response.headers["Connection"], "close")
            self.assertTrue(response.will_close)
        finally:
            conn.close()


    # ---- S3 ----------------------------------------------------------------------------------------
    def s3_multipart(self, bucket, key, parts):
        status, _, body, _ = self.request("POST", f"/{bucket}/{key}?uploads")
        self.assertEqual(status, 200)
        upload_id = re.search(rb"<UploadId>(\w+)</UploadId>", body)[1].decode()
        etags = {}
        for number, data in enumerate(parts, 1):
            status, headers, _, _ = self.request("PUT", f"/{bucket}/{key}?partNumber={number}&uploadId={upload_id}",
                                                 data)
            if status == 500:  # the flaky part: the second try takes it
                status, headers, _, _ = self.request(
                    "PUT", f"/{bucket}/{key}?partNumber={number}&uploadId={upload_id}", data)
            self.assertEqual(status, 200)
            self.assertEqual(headers["ETag"], f'"{hashlib.md5(data).hexdigest()}"')
            etags[number] = headers["ETag"]
        return upload_id, etags

    def complete(self, bucket, key, upload_id, etags):
        body = "<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>" for n, e in sorted(etags.items())) + \
            "</CompleteMultipartUpload>"
        return self.request("POST", f"/{bucket}/{key}?uploadId={upload_id}", body.encode())

    def test_s3_put_object_and_multipart(self):
        self.assertEqual(self.request("HEAD", "/s3")[0], 200)
        self.assertEqual(self.request("PUT", "/s3/t17/small.bin", b"small")[0], 200)
        self.assertEqual(self.stored("s3", "t17", "small.bin").read_bytes(), b"small")
        parts = [os.urandom(300_000), os.urandom(1000)]
        upload_id, etags = self.s3_multipart("s3", "t17/a/big.bin", parts)
        status, _, body, _ = self.request("GET", f"/s3/t17/a/big.bin?uploadId={upload_id}")
        self.assertEqual(status, 200)
        self.assertEqual(re.findall(rb"<PartNumber>(\d+)</PartNumber>", body), [b"1", b"2"])
        self.assertIn(b"<Size>300000</Size>", body)
        status, _, body, _ = self.complete("s3", "t17/a/big.bin", upload_id, etags)
        self.assertEqual(status, 200, body)
        self.assertEqual(self.stored("s3", "t17", "a", "big.bin").read_bytes(), b"".join(parts))
        self.assertEqual(self.request("GET", f"/s3/t17/a/big.bin?uploadId={upload_id}")[0], 404)  # NoSuchUpload
        self.assertEqual(self.request("DELETE", "/s3/t17/a/big.bin")[0], 204)
        self.assertFalse(self.stored("s3", "t17", "a", "big.bin").exists())

    def test_s3_abort(self):
        upload_id, _ = self.s3_multipart("s3", "t18/f", [b"x"])
        self.assertEqual(self.request("DELETE", f"/s3/t18/f?uploadId={upload_id}")[0], 204)
        status, _, body, _ = self.request("GET", f"/s3/t18/f?uploadId={upload_id}")
        self.assertEqual(status, 404)
        self.assertIn(b"<Code>NoSuchUpload</Code>", body)

    def test_s3_without_list_parts(self):
        for code in (501, 500, 404):
            bucket = f"s3-listparts-{code}"
            status, _, body, _ = self.request("POST", f"/{bucket}/t19?uploads")
            upload_id = re.search(rb"<UploadId>(\w+)</UploadId>", body)[1].decode()
            self.assertEqual(self.request("PUT", f"/{bucket}/t19?partNumber=1&uploadId={upload_id}", b"a")[0], 200)
            # The first try of part 2 of this key fails, once.
            self.assertEqual(self.request("PUT", f"/{bucket}/t19?partNumber=2&uploadId={upload_id}", b"b")[0], 500)
            self.assertEqual(self.request("PUT", f"/{bucket}/t19?partNumber=2&uploadId={upload_id}", b"b")[0], 200)
            status, _, body, _ = self.request("GET", f"/{bucket}/t19?uploadId={upload_id}")
            self.assertEqual(status, code)
            if code == 404:
                self.assertEqual(body, b"404 page not found\n")  # no S3 error document
            self.assertEqual(self.complete(bucket, "t19", upload_id, {1: '"x"', 2: '"y"'})[0], 200)
            self.assertEqual(self.stored(bucket, "t19").read_bytes(), b"ab")

    def test_s3_authorization_split_on_comma_space(self):
        def auth(sep):
            return {"Authorization": sep.join(["AWS4-HMAC-SHA256 Credential=k/20260101/us-east-1/s3/aws4_request",
                                               "SignedHeaders=host", "Signature=00"])}
        status, _, body, _ = self.request("PUT", "/s3-comma-space/t20", b"x", auth(","))
        self.assertEqual(status, 400)
        self.assertIn(b"AuthorizationHeaderMalformed", body)
        self.assertEqual(self.request("PUT", "/s3-comma-space/t20", b"x", auth(", "))[0], 200)


if __name__ == "__main__":
    unittest.main()
