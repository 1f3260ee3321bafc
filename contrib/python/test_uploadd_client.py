"""Tests of uploadd_client.py against a real uploadd (and a few against a fake one).

Run:  UPLOADD_BIN=/path/to/folder/with/uploadd/and/uploadctl python3 contrib/python/test_uploadd_client.py -v

UPLOADD_BIN defaults to <repo>/.build/debug. Each test class starts its own daemon in a temporary
folder (its socket, journal, cache and config there) and kills it at the end, failure or not. Only
file:// destinations inside that folder are used: no servers, no network.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import uploadd_client as ud  # noqa: E402

REPO = HERE.parent.parent
BIN = Path(os.environ.get("UPLOADD_BIN") or REPO / ".build" / "debug")
UPLOADD = BIN / "uploadd"
UPLOADCTL = BIN / "uploadctl"

_started: list["Daemon"] = []


class Daemon:
    """A real uploadd in folder ``root``: start, stop (SIGTERM), kill."""

    def __init__(self, root: Path, config: str = ""):
        self.root = root
        self.run = root / "run"
        self.socket = str(self.run / "control.sock")
        self.config = root / "uploadd.conf"
        self.config.write_text(config)
        self.log_path = root / "daemon.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 30) -> None:
        self.run.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.run, 0o700)
        env = {k: v for k, v in os.environ.items() if k not in ("UPLOADD_SOCKET", "NOTIFY_SOCKET", "LISTEN_FDS")}
        # No desktop notifications on the session bus of whoever runs the tests.
        env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={self.root}/no-session-bus"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(UPLOADD), "--state-dir", str(self.root / "state"), "--cache-dir", str(self.root / "cache"),
                 "--socket", self.socket, "--config", str(self.config)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        _started.append(self)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"uploadd exited with {self.process.returncode}:\n{self.log()}")
            status = subprocess.run([str(UPLOADCTL), "--socket", self.socket, "status"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if status.returncode == 0:
                return
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"uploadd did not answer within {timeout} s:\n{self.log()}")
            time.sleep(0.1)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM, then wait for it to exit (SIGKILL if it takes too long)."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise RuntimeError(f"uploadd did not stop on SIGTERM within {timeout} s:\n{self.log()}")

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def _kill_all() -> None:
    for daemon in _started:
        daemon.kill()


atexit.register(_kill_all)


class DaemonTestCase(unittest.TestCase):
    """Starts one daemon for the class (transfers = 1, so a queue builds up) and kills it after."""

    config = "[daemon]\ntransfers = 1\n"

    @classmethod
    def setUpClass(cls) -> None:
        if not UPLOADD.exists() or not UPLOADCTL.exists():
            raise unittest.SkipTest(f"no uploadd/uploadctl in {BIN} (set UPLOADD_BIN, or run swift build)")
        cls.root = Path(tempfile.mkdtemp(prefix="uploadd-py-"))
        cls.addClassCleanup(shutil.rmtree, cls.root, True)
        cls.daemon = Daemon(cls.root, cls.config.replace("@ROOT@", str(cls.root)))
        cls.addClassCleanup(cls.daemon.kill)
        cls.daemon.start()
        cls.client = ud.Client(cls.daemon.socket, timeout=60)
        cls.addClassCleanup(cls.client.close)
        cls.counter = 0

    def setUp(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=self._testMethodName + "-", dir=self.root))

    def files(self, count: int, size: int = 100, prefix: str = "f") -> list[str]:
        """``count`` new files in a folder of their own; their paths."""
        folder = Path(tempfile.mkdtemp(prefix="src-", dir=self.folder))
        paths = []
        for n in range(count):
            path = folder / f"{prefix}{n:04}.txt"
            path.write_bytes(os.urandom(size))
            paths.append(str(path))
        return paths

    def destination(self, name: str = "out") -> str:
        out = self.folder / name
        return out.as_uri() + "/"

    def held_job(self) -> tuple[dict, int]:
        """A job that stays put: queued behind 400 others (one transfer at a time), then paused;
        and the batch of those 400."""
        for _ in range(5):
            fillers = self.files(400, 10)
            jobs, errors = self.client.add_many(fillers, self.destination("fill"))
            self.assertEqual(errors, [])
            last = self.client.add(self.files(1)[0], self.destination("held"), priority=-1000)
            try:
                return self.client.pause(last["id"]), jobs[0]["batch"]
            except ud.UploaddError as error:
                if error.code != ud.CODE_INVALID_TRANSITION:
                    raise
        self.fail("could not get a job paused before it ran")


# ------------------------------------------------------------------------------------------------
# Without a daemon
# ------------------------------------------------------------------------------------------------


class SocketLocationTests(unittest.TestCase):
    def test_rules(self) -> None:
        uid = os.getuid()
        with tempfile.TemporaryDirectory() as runtime:
            self.assertEqual(ud.resolve_socket_path("/x/s.sock", {"UPLOADD_SOCKET": "/y"}), "/x/s.sock")
            self.assertEqual(ud.resolve_socket_path("", {"UPLOADD_SOCKET": "/y"}), "/y")
            self.assertEqual(ud.resolve_socket_path(None, {"UPLOADD_SOCKET": "", "XDG_RUNTIME_DIR": runtime}),
                             runtime + "/uploadd/control.sock")
            self.assertEqual(ud.resolve_socket_path(None, {"XDG_RUNTIME_DIR": runtime + "/"}),
                             runtime + "/uploadd/control.sock")
            fallback = f"/tmp/uploadd-{uid}/control.sock"
            self.assertEqual(ud.resolve_socket_path(None, {"XDG_RUNTIME_DIR": runtime + "/missing"}), fallback)
            self.assertEqual(ud.resolve_socket_path(None, {"XDG_RUNTIME_DIR": "relative"}), fallback)
            self.assertEqual(ud.resolve_socket_path(None, {}), fallback)

    def test_folder_checks(self) -> None:
        with tempfile.TemporaryDirectory() as parent:
            folder = os.path.join(parent, "uploadd-x")
            os.mkdir(folder, 0o700)
            os.chmod(folder, 0o700)
            self.assertIsNone(ud._folder_problem(folder))
            os.chmod(folder, 0o755)
            self.assertIn("lets group or others in", ud._folder_problem(folder))
            link = os.path.join(parent, "link")
            os.symlink(folder, link)
            self.assertIn("is a symlink", ud._folder_problem(link))
            self.assertIsNone(ud._folder_problem(os.path.join(parent, "missing")))

    def test_not_running_names_the_path(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = folder + "/nothing.sock"
            with self.assertRaises(ud.UploaddNotRunning) as caught:
                ud.Client(path)
            self.assertEqual(caught.exception.path, path)
            self.assertIn(path, str(caught.exception))
            self.assertIsInstance(caught.exception, ConnectionError)


class FakeDaemon:
    """A Unix socket that answers the first request line of each connection with scripted lines
    (``every_line``: each line, until the client closes; a batch line is one request, a list)."""

    def __init__(self, lines_for_request, every_line: bool = False):
        self.every_line = every_line
        self.folder = tempfile.mkdtemp(prefix="uploadd-fake-")
        self.path = self.folder + "/s.sock"
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(1)
        self.lines_for_request = lines_for_request
        self.requests: list = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return  # closed
            self._answer(connection)

    def _answer(self, connection) -> None:
        if self.every_line:
            return self._answer_each(connection)
        with connection:
            data = b""
            while b"\n" not in data:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
            request = json.loads(data.split(b"\n")[0])
            self.requests.append(request)
            for item in self.lines_for_request(request):
                connection.sendall(json.dumps(item).encode() + b"\n")
            time.sleep(0.5)

    def _answer_each(self, connection) -> None:
        with connection:
            data = b""
            while True:
                while b"\n" not in data:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                line, data = data.split(b"\n", 1)
                request = json.loads(line)
                self.requests.append(request)
                for item in self.lines_for_request(request):
                    connection.sendall(json.dumps(item).encode() + b"\n")

    def close(self) -> None:
        self.server.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _note(method, params):
    return {"jsonrpc": "2.0", "method": method, "params": params}


class EventStreamLogicTests(unittest.TestCase):
    """Ordering, stale-dropping and overflow, with the daemon's lines scripted."""

    def test_orders_by_revision_and_raises_on_overflow(self) -> None:
        def script(request):
            return [
                _note("job.state", {"id": 1, "state": "running", "revision": 3}),  # before the answer
                _note("job.progress", {"id": 1, "bytes_sent": 5, "revision": 2}),  # stale
                {"jsonrpc": "2.0", "id": request["id"], "result": {"jobs": [
                    {"id": 2, "state": "queued", "revision": 5}, {"id": 1, "state": "queued", "revision": 2}]}},
                _note("job.state", {"id": 2, "state": "queued", "revision": 4}),  # stale
                _note("job.progress", {"id": 1, "bytes_sent": 9, "revision": 3}),
                _note("job.state", {"id": 2, "state": "running", "revision": 6}),
                _note("job.removed", {"id": 1}),
                _note("job.state", {"id": 1, "state": "canceled", "revision": 9}),  # after removal
                _note("events.overflow", {"message": "too slow"}),
            ]

        fake = FakeDaemon(script)
        self.addCleanup(fake.close)
        stream = ud.Client(fake.path, connect=False).events(batch=7, kinds=["job.state"], snapshot=True)
        self.addCleanup(stream.close)
        self.assertEqual(fake.requests[0]["method"], "events.subscribe")
        self.assertEqual(fake.requests[0]["params"], {"batch": 7, "kinds": ["job.state"], "snapshot": True})
        self.assertEqual([j["id"] for j in stream.snapshot], [2, 1])
        seen = []
        with self.assertRaises(ud.SubscriptionOverflow) as caught:
            for event in stream:
                seen.append((event.kind, event.id, event.revision, event.from_snapshot))
        self.assertIn("too slow", str(caught.exception))
        self.assertEqual(seen, [
            ("job.state", 1, 2, True), ("job.state", 2, 5, True), ("job.state", 1, 3, False),
            ("job.progress", 1, 3, False), ("job.state", 2, 6, False), ("job.removed", 1, None, False)])

    def test_wait_narrows_to_ends_and_falls_back_when_a_daemon_refuses_states(self) -> None:
        def script(request):
            if "states" in request["params"]:  # as a daemon from before events.states answers
                return [{"jsonrpc": "2.0", "id": request["id"],
                         "error": {"code": -32602, "message": "invalid params: unknown key 'states'"}}]
            return [{"jsonrpc": "2.0", "id": request["id"],
                     "result": {"jobs": [{"id": 4, "state": "completed", "revision": 3}]}}]

        fake = FakeDaemon(script)
        self.addCleanup(fake.close)
        final = ud.Client(fake.path, connect=False).wait(4, timeout=10)
        self.assertEqual([j["state"] for j in final], ["completed"])
        self.assertEqual([r["method"] for r in fake.requests], ["events.subscribe", "events.subscribe"])
        self.assertEqual(fake.requests[0]["params"]["states"], ["canceled", "completed", "failed", "queued"])
        self.assertNotIn("states", fake.requests[1]["params"])

    def test_add_many_sends_sources_and_falls_back_when_a_daemon_refuses_them(self) -> None:
        next_id = [10]

        def job(source):
            next_id[0] += 1
            return {"id": next_id[0] - 1, "state": "queued", "batch": 10, "source": source}

        def older(request):  # as a daemon from before sources answers
            if isinstance(request, dict):
                return [{"jsonrpc": "2.0", "id": request["id"],
                         "error": {"code": -32602, "message": "invalid params: unknown key 'sources'"}}]
            return [[{"jsonrpc": "2.0", "id": r["id"], "result": job(r["params"]["source"])} for r in request]]

        def newer(request):
            params = request["params"]
            sources = [s if isinstance(s, str) else s["source"] for s in params["sources"]]
            return [{"jsonrpc": "2.0", "id": request["id"], "result": {
                "jobs": [job(s) for s in sources if s != "/x/bad"],
                "errors": [{"index": i, "source": s, "code": -32003, "message": "cannot open " + s}
                           for i, s in enumerate(sources) if s == "/x/bad"]}}]

        for script, methods in ((newer, ["job.add", "job.add"]), (older, ["job.add", "batch"])):
            next_id[0] = 10
            fake = FakeDaemon(script, every_line=True)
            self.addCleanup(fake.close)
            client = ud.Client(fake.path)
            self.addCleanup(client.close)
            paths = ["/x/a", "/x/bad", "/x/c"] if script is newer else ["/x/a", "/x/c"]
            jobs, errors = client.add_many(paths, "file:///out/", source_identity=lambda p: "1:2")
            self.assertEqual([j["source"] for j in jobs], ["/x/a", "/x/c"])
            self.assertEqual([j["batch"] for j in jobs], [10, 10])
            self.assertEqual([r["method"] if isinstance(r, dict) else "batch" for r in fake.requests][:2],
                             methods[:2])
            first = fake.requests[0]["params"]
            self.assertEqual(first["sources"], [{"source": "/x/a", "source_identity": "1:2"}])
            self.assertTrue(first["new_batch"])
            self.assertNotIn("source", first)
            if script is newer:
                self.assertEqual(errors, [{"source": "/x/bad", "code": -32003, "message": "cannot open /x/bad"}])
                self.assertEqual(fake.requests[1]["params"]["batch"], 10)
                self.assertEqual(len(fake.requests[1]["params"]["sources"]), 2)
            else:
                self.assertEqual(errors, [])
                self.assertEqual(fake.requests[1][0]["params"]["source"], "/x/a", "sent again, one add per file")
                self.assertEqual(fake.requests[2][0]["params"]["batch"], 10)

    def test_wait_cut_off_by_overflow_goes_on_and_a_job_removed_meanwhile_has_ended(self) -> None:
        def script(request):
            answer = {"jsonrpc": "2.0", "id": request["id"]}
            if len(fake.requests) == 1:
                answer["result"] = {"jobs": [{"id": 1, "state": "queued", "revision": 1},
                                             {"id": 2, "state": "queued", "revision": 1}]}
                return [answer, _note("events.overflow", {"message": "too slow"})]
            # Job 1 ended and job 2 was removed meanwhile: only the snapshot says so.
            answer["result"] = {"jobs": [{"id": 1, "state": "completed", "revision": 3}]}
            return [answer]

        fake = FakeDaemon(script)
        self.addCleanup(fake.close)
        final = ud.Client(fake.path, connect=False).wait([1, 2], timeout=10)
        self.assertEqual([(j["id"], j["state"]) for j in final], [(1, "completed")])
        self.assertEqual([r["method"] for r in fake.requests], ["events.subscribe", "events.subscribe"])

    def test_error_answer_raises_with_code(self) -> None:
        fake = FakeDaemon(lambda request: [{"jsonrpc": "2.0", "id": request["id"],
                                            "error": {"code": -32602, "message": "invalid params: x"}}])
        self.addCleanup(fake.close)
        with self.assertRaises(ud.UploaddError) as caught, ud.Client(fake.path) as client:
            client.call("job.get", {"id": 1})
        self.assertEqual(caught.exception.code, -32602)
        self.assertEqual(caught.exception.message, "invalid params: x")


# ------------------------------------------------------------------------------------------------
# Against the daemon
# ------------------------------------------------------------------------------------------------


class ClientTests(DaemonTestCase):
    config = "[daemon]\ntransfers = 1\n\n[remote local]\nprotocol = file\nurl = file://@ROOT@/remote/\n"

    def test_hello_and_status(self) -> None:
        hello = self.client.hello()
        self.assertEqual(hello["name"], "uploadd")
        self.assertEqual(hello["protocol_version"], 1)
        self.assertIn("events.subscribe", hello["methods"])
        self.assertIn("file", hello["protocols"])
        self.assertIsInstance(hello.get("capabilities"), list, "daemon.hello has no capabilities list")
        self.assertIn("preparation_steps", hello)
        status = self.client.status()
        self.assertEqual(status["socket"], self.daemon.socket)
        self.assertEqual(set(status["jobs"]), set(ud.JOB_STATES))
        conditions = status["conditions"]
        self.assertEqual(conditions["waiting"], {"network": 0, "metered": 0, "battery": 0})
        self.assertIn(conditions["metered"], (True, False, None))
        self.assertIn(conditions["on_battery"], (True, False, None))

    def test_add_list_get(self) -> None:
        source = self.files(1, 1000)[0]
        job = self.client.add(source, self.destination())
        self.assertEqual(job["source"], source)
        self.assertIn(job["state"], ("queued", "running", "completed"))
        self.assertIsInstance(job["revision"], int)
        [final] = self.client.wait(job["id"], timeout=60)
        self.assertEqual(final["state"], "completed")
        self.assertEqual((self.folder / "out" / Path(source).name).read_bytes(), Path(source).read_bytes())
        listed = self.client.list(ids=[job["id"]])
        self.assertEqual([j["id"] for j in listed], [job["id"]])
        self.assertIn(job["id"], [j["id"] for j in self.client.list(states=["completed"])])
        got = self.client.get(job["id"])
        self.assertEqual(got["state"], "completed")
        self.assertTrue(got["history"])
        self.assertGreater(got["revision"], job["revision"])
        typed = ud.Job.from_dict(got)
        self.assertEqual(typed.id, job["id"])
        self.assertTrue(typed.is_terminal)
        self.assertEqual(typed.bytes_total, 1000)
        self.assertIsNotNone(typed.created_at.tzinfo)
        self.assertEqual([j["id"] for j in self.client.get([job["id"]])], [job["id"]])

    def test_a_file_other_than_the_one_checked_is_refused(self) -> None:
        # A symlink (or any other file) renamed over the checked file before the daemon opens it:
        # the identity the walk found goes with the path, and the daemon refuses the mismatch.
        checked, other = self.files(2, 100)
        identity = ud.source_identity(other)
        with self.assertRaises(ud.UploaddError) as refused:
            self.client.add(checked, self.destination(), source_identity=identity)
        self.assertEqual(refused.exception.code, ud.CODE_SOURCE_ERROR)
        self.assertIn("is not the file that was checked", refused.exception.message)
        jobs, errors = self.client.add_many([checked, other], self.destination(),
                                            source_identity=lambda path: identity)
        self.assertEqual([j["source"] for j in jobs], [other])
        self.assertEqual([e["source"] for e in errors], [checked])
        # The default: what os.stat finds when add is called.
        job = self.client.add(checked, self.destination())
        self.assertEqual(job["source"], checked)
        ended = self.client.wait([job["id"]] + [j["id"] for j in jobs], timeout=60)
        self.assertEqual([j["state"] for j in ended], ["completed", "completed"])

    def test_relative_source_is_made_absolute(self) -> None:
        source = Path(self.files(1)[0])
        old = os.getcwd()
        os.chdir(source.parent)
        try:
            job = self.client.add(source.name, self.destination())
        finally:
            os.chdir(old)
        self.assertEqual(job["source"], str(source))

    def test_errors_carry_the_daemon_code(self) -> None:
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.get(999999)
        self.assertEqual(caught.exception.code, ud.CODE_JOB_NOT_FOUND)
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.call("job.list", {"nonsense": 1})
        self.assertEqual(caught.exception.code, ud.CODE_INVALID_PARAMS)
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.call("no.such.method")
        self.assertEqual(caught.exception.code, ud.CODE_METHOD_NOT_FOUND)
        outcomes = self.client.batch([("daemon.hello", None), ("job.get", {"id": 999999})])
        self.assertEqual(outcomes[0]["name"], "uploadd")
        self.assertIsInstance(outcomes[1], ud.UploaddError)
        self.assertEqual(outcomes[1].code, ud.CODE_JOB_NOT_FOUND)

    def test_list_pages(self) -> None:
        jobs, _ = self.client.add_many(self.files(7, 10, prefix="page"), self.destination())
        batch = jobs[0]["batch"]
        ids = sorted(j["id"] for j in jobs)
        page, after = self.client.list_page(limit=3, batch=batch, job_fields=["source"])
        self.assertEqual([j["id"] for j in page], ids[:3])
        self.assertEqual(after, ids[2])
        self.assertEqual({key for j in page for key in j}, {"id", "state", "source"})
        walked = page
        while after is not None:
            page, after = self.client.list_page(after=after, limit=3, batch=batch)
            self.assertLessEqual(len(page), 3)
            walked += page
        self.assertEqual([j["id"] for j in walked], ids)
        # list() follows the pages itself: seven jobs in pages of two.
        self.client.LIST_PAGE = 2
        self.assertEqual([j["id"] for j in self.client.list(batch=batch)], ids)
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.call("job.list", {"ids": ids, "limit": 2})
        self.assertEqual(caught.exception.code, ud.CODE_INVALID_PARAMS)
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.call("job.list", {"limit": 0})
        self.assertEqual(caught.exception.code, ud.CODE_INVALID_PARAMS)

    def test_add_many_one_batch(self) -> None:
        paths = self.files(1203, 10)
        jobs, errors = self.client.add_many(paths + [str(self.folder / "missing.txt")], self.destination())
        self.assertEqual(len(jobs), 1203)
        self.assertEqual([e["source"] for e in errors], [str(self.folder / "missing.txt")])
        self.assertEqual(errors[0]["code"], ud.CODE_SOURCE_ERROR)
        batch = jobs[0]["id"]
        self.assertEqual({j["batch"] for j in jobs}, {batch})
        self.assertEqual([j["source"] for j in jobs], paths)
        self.assertEqual(sorted(j["id"] for j in self.client.list(batch=batch)), sorted(j["id"] for j in jobs))
        final = self.client.wait(batch=batch, timeout=120)
        self.assertEqual(len(final), 1203)
        self.assertEqual({j["state"] for j in final}, {"completed"})
        self.assertEqual(len(os.listdir(self.folder / "out")), 1203)

    def test_events_in_revision_order(self) -> None:
        raw = _RawSubscriber(self.daemon.socket)
        self.addCleanup(raw.close)
        with self.client.events() as stream:
            jobs, errors = self.client.add_many(self.files(20, 50_000), self.destination())
            self.assertEqual(errors, [])
            ids = {j["id"] for j in jobs}
            states: dict[int, list] = {i: [] for i in ids}
            revisions: dict[int, list] = {i: [] for i in ids}
            deadline = time.monotonic() + 60
            while any(not s or s[-1] not in ud.TERMINAL_STATES for s in states.values()):
                event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
                self.assertIsNotNone(event, f"events stopped coming: {states}")
                if event.kind != "job.removed":
                    self.assertIsInstance(event.revision, int, event.params)
                if event.id in ids:
                    revisions[event.id].append(event.revision)
                    if event.kind == "job.state":
                        states[event.id].append(event.params["state"])
        for job_id in ids:
            self.assertEqual(revisions[job_id], sorted(revisions[job_id]), f"job {job_id}: {revisions[job_id]}")
            self.assertEqual(states[job_id][-1], "completed")
            self.assertIn("running", states[job_id])
        # What the daemon itself sent on one connection is in revision order too (not only what
        # the client kept).
        for job_id, seen in raw.revisions(ids).items():
            self.assertTrue(seen, f"no events for job {job_id} on the raw subscription")
            self.assertEqual(seen, sorted(seen), f"job {job_id}: the daemon sent revisions {seen}")

    def test_event_filters(self) -> None:
        jobs, _ = self.client.add_many(self.files(3), self.destination())
        other = self.client.add(self.files(1)[0], self.destination())
        batch = jobs[0]["batch"]
        self.client.wait(batch=batch, timeout=60)
        self.client.wait(other["id"], timeout=60)
        with self.client.events(batch=batch, kinds=["job.state"], snapshot=True) as by_batch, \
                self.client.events(ids=[other["id"]], kinds=["job.removed"]) as by_id:
            self.assertEqual(sorted(j["id"] for j in by_batch.snapshot), sorted(j["id"] for j in jobs))
            first = _drain(by_batch, 3)
            self.assertEqual([e.from_snapshot for e in first], [True] * 3)
            self.assertEqual(sorted(e.id for e in first), sorted(j["id"] for j in jobs))
            self.assertIsNone(by_id.snapshot)
            self.client.remove([j["id"] for j in jobs] + [other["id"]])
            # job.removed was not asked for on by_batch, and the jobs do not change state any more
            self.assertIsNone(by_batch.next(timeout=1))
            removed = by_id.next(timeout=10)
            self.assertEqual((removed.kind, removed.id), ("job.removed", other["id"]))
            self.assertIsNone(by_id.next(timeout=0.5))
        with self.assertRaises(ValueError):
            self.client.events(kinds=["job.nonsense"])

    def test_a_states_filter_sends_only_those_states(self) -> None:
        with self.client.events(kinds=["job.state"], states=["completed", "failed"]) as ends:
            job = self.client.add(self.files(1)[0], self.destination())
            self.assertEqual(self.client.wait(job["id"], timeout=60)[0]["state"], "completed")
            seen = [(e.id, e.params["state"]) for e in _drain(ends, 1)]
            self.assertEqual(seen, [(job["id"], "completed")])
            self.assertIsNone(ends.next(timeout=0.5), "no queued or running before it, nothing after")
        with self.assertRaises(ValueError):
            self.client.events(states=["done"])

    def test_job_fields_narrow_the_snapshot_and_the_events(self) -> None:
        done = self.client.add(self.files(1)[0], self.destination())
        self.client.wait(done["id"], timeout=60)
        with self.client.events(kinds=["job.state"], snapshot=True, job_fields=["revision"]) as stream:
            self.assertEqual([sorted(j) for j in stream.snapshot], [["id", "revision", "state"]])
            job = self.client.add(self.files(1)[0], self.destination())
            self.client.wait(job["id"], timeout=60)
            for event in _drain(stream, 3):
                self.assertEqual(sorted(event.params), ["id", "revision", "state"])
        with self.assertRaises(ud.UploaddError) as refused:
            self.client.events(job_fields=["size"])
        self.assertIn("no field 'size'", refused.exception.message)
        with self.assertRaises(TypeError):
            self.client.events(job_fields="error")

    def test_wait(self) -> None:
        good = self.client.add(self.files(1)[0], self.destination())
        (self.folder / "notdir").write_text("x")
        bad = self.client.add(self.files(1)[0], (self.folder / "notdir").as_uri() + "/sub/")
        final = self.client.wait([bad["id"], good["id"]], timeout=60)
        self.assertEqual([j["id"] for j in final], [bad["id"], good["id"]])
        self.assertEqual([j["state"] for j in final], ["failed", "completed"])
        self.assertTrue(final[0]["error"]["message"])
        # wait on what has already ended returns at once
        self.assertEqual(self.client.wait(good["id"], timeout=5)[0]["state"], "completed")
        # retry a failed job: it fails again, with one more attempt
        retried = self.client.retry(bad["id"])
        self.assertIn(retried["state"], ("queued", "running", "failed"))
        self.assertEqual(self.client.wait(bad["id"], timeout=60)[0]["state"], "failed")
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.wait(999999, timeout=5)
        self.assertEqual(caught.exception.code, ud.CODE_JOB_NOT_FOUND)
        self.assertEqual(self.client.wait(999999, timeout=5, missing_ok=True), [])

    def test_wait_timeout_and_removal(self) -> None:
        held, _ = self.held_job()
        self.assertEqual(held["state"], "paused")
        started = time.monotonic()
        with self.assertRaises(TimeoutError):
            self.client.wait(held["id"], timeout=0.5)
        self.assertLess(time.monotonic() - started, 5)
        # a removed job counts as ended
        answers: list = []

        def remove_soon() -> None:
            time.sleep(0.5)
            with ud.Client(self.daemon.socket) as other:
                answers.append(other.remove(held["id"]))

        remover = threading.Thread(target=remove_soon)
        remover.start()
        self.addCleanup(remover.join)
        self.assertEqual(self.client.wait(held["id"], timeout=30), [])
        remover.join()
        self.assertEqual(answers[0]["id"], held["id"])

    def test_job_actions(self) -> None:
        held, fillers = self.held_job()
        job_id = held["id"]
        self.assertEqual(self.client.priority(job_id, 7)["priority"], 7)
        moved = self.client.move(job_id, bottom=True)
        self.assertEqual(moved["id"], job_id)
        with self.assertRaises(ValueError):
            self.client.move(job_id)
        many = self.client.pause([job_id, 999999])
        self.assertEqual(many["errors"][0]["id"], 999999)
        self.assertEqual(many["errors"][0]["code"], ud.CODE_JOB_NOT_FOUND)
        canceled = self.client.cancel(job_id)
        self.assertEqual(canceled["state"], "canceled")
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.pause(job_id)
        self.assertEqual(caught.exception.code, ud.CODE_INVALID_TRANSITION)
        paused = self.client.pause(batch=fillers)
        self.assertIsInstance(paused["jobs"], list)
        self.assertTrue(all(j["state"] == "paused" for j in paused["jobs"]))
        resumed = self.client.resume(batch=fillers)
        self.assertEqual(sorted(j["id"] for j in resumed["jobs"]), sorted(j["id"] for j in paused["jobs"]))
        self.client.wait(batch=fillers, timeout=60)
        cleared = self.client.clear(job_fields=[])
        self.assertIn(job_id, [j["id"] for j in cleared])
        self.assertEqual({key for j in cleared for key in j}, {"id", "state"})
        with self.assertRaises(ud.UploaddError):
            self.client.get(job_id)

    def test_delete(self) -> None:
        job = self.client.add(self.files(1)[0], self.destination())
        self.client.wait(job["id"], timeout=60)
        copy = Path(job["source"]).name
        self.assertTrue((self.folder / "out" / copy).exists())
        self.client.delete(job["id"])
        self.assertFalse((self.folder / "out" / copy).exists())

    def test_limit_remotes(self) -> None:
        self.assertEqual(self.client.limit("5M")["bandwidth_limit"], 5 * 1024 * 1024)
        self.assertEqual(self.client.status()["bandwidth_limit"], 5 * 1024 * 1024)
        self.assertIsNone(self.client.limit(None)["bandwidth_limit"])
        remotes = self.client.remotes()
        self.assertEqual([r["name"] for r in remotes], ["local"])
        self.assertEqual(remotes[0]["protocol"], "file")
        (self.root / "remote").mkdir(exist_ok=True)
        test = self.client.test_remote("local")
        self.assertEqual(test["name"], "local")
        self.assertTrue(test["ok"], test)
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.test_remote("nope")
        self.assertEqual(caught.exception.code, ud.CODE_INVALID_PARAMS)
        self.assertEqual(self.client.reload()["warnings"], [])

    def test_metadata_round_trip(self) -> None:
        metadata = {"album": "2026", "caption": "été à la mer ☀", "k" * 64: "v" * 1024}
        with self.client.events(kinds=["job.state"]) as stream:
            job = self.client.add(self.files(1)[0], self.destination(), metadata=metadata, client_token="meta-1")
            self.assertEqual(job["metadata"], metadata)
            self.assertEqual(job["client_token"], "meta-1")
            seen = [e for e in _drain_until(stream, job["id"], "completed")]
        self.assertTrue(seen)
        for event in seen:
            self.assertEqual(event.params["metadata"], metadata)
        self.assertEqual(seen[-1].job.metadata, metadata)
        self.assertEqual(self.client.get(job["id"])["metadata"], metadata)
        self.assertEqual(self.client.list(ids=[job["id"]])[0]["metadata"], metadata)
        plain = self.client.add(self.files(1)[0], self.destination())
        self.assertNotIn("metadata", plain)
        self.assertNotIn("client_token", plain)

    def test_metadata_limits(self) -> None:
        source = self.files(1)[0]
        too_much = {
            "33 keys": {f"k{n}": "v" for n in range(33)},
            "empty key": {"": "v"},
            "65-byte key": {"k" * 65: "v"},
            "1025-byte value": {"k": "v" * 1025},
            "over 8 KiB": {f"k{n}": "v" * 1000 for n in range(9)},
            "multibyte key over 64 bytes": {"é" * 33: "v"},
        }
        for what, metadata in too_much.items():
            with self.subTest(what):
                with self.assertRaises(ud.UploaddError) as caught:
                    self.client.add(source, self.destination(), metadata=metadata)
                self.assertEqual(caught.exception.code, ud.CODE_INVALID_PARAMS)
        job = self.client.add(source, self.destination(), metadata={f"k{n}": "v" for n in range(32)})
        self.assertEqual(len(job["metadata"]), 32)

    def test_resumed_subscription_misses_nothing(self) -> None:
        """Subscribe, disconnect, go on with a snapshot while jobs keep being added, run, end and
        get removed: the merged view ends with every job in its final state (or removed)."""
        client = ud.Client(self.daemon.socket)
        self.addCleanup(client.close)
        added: list[int] = []
        removed_ids: list[int] = []
        done = threading.Event()
        failure: list[BaseException] = []
        (self.folder / "notdir").write_text("x")

        def produce() -> None:
            try:
                for round_ in range(12):
                    jobs, errors = client.add_many(self.files(40, 2000, f"r{round_}-"), self.destination())
                    assert not errors, errors
                    added.extend(j["id"] for j in jobs)
                    bad = client.add(self.files(1)[0], (self.folder / "notdir").as_uri() + "/x/")
                    added.append(bad["id"])
                    if round_ % 3 == 1:
                        # remove a few that may still be queued or running
                        victims = [j["id"] for j in jobs[-3:]]
                        client.remove(victims)
                        removed_ids.extend(victims)
                    time.sleep(0.15)
            except BaseException as error:  # reported by the test
                failure.append(error)
            finally:
                done.set()

        view: dict[int, dict] = {}
        gone: set[int] = set()

        def take(event: ud.Event) -> None:
            if event.from_snapshot:
                return  # the snapshot is taken in whole below
            if event.kind == "job.removed":
                gone.add(event.id)
                view.pop(event.id, None)
            elif event.kind == "job.state":
                known = view.get(event.id)
                if known is not None:
                    self.assertGreater(event.params["revision"], known["revision"])
                view[event.id] = event.params

        producer = threading.Thread(target=produce)
        stream = self.client.events(snapshot=True)
        for job in stream.snapshot:
            view[job["id"]] = job
        producer.start()
        self.addCleanup(producer.join)
        reconnects = 0
        changed_while_away = 0
        try:
            while not done.is_set() or reconnects < 3:
                # read for a while, then drop the connection and stay away while jobs change
                until = time.monotonic() + 0.2
                while (event := stream.next(timeout=max(0.0, until - time.monotonic()))) is not None:
                    take(event)
                stream.close()
                time.sleep(0.3)
                added_before = list(added)
                stream = self.client.events(snapshot=True)
                reconnects += 1
                snapshot_ids = {j["id"] for j in stream.snapshot}
                # the snapshot is the truth: jobs not in it are gone (some were added and removed
                # while we were away, and were never seen at all)
                for job_id in list(view) + added_before:
                    if job_id not in snapshot_ids:
                        gone.add(job_id)
                        view.pop(job_id, None)
                for job in stream.snapshot:
                    known = view.get(job["id"])
                    self.assertTrue(known is None or job["revision"] >= known["revision"])
                    if job["id"] in added_before and (known is None or job["revision"] > known["revision"]):
                        changed_while_away += 1
                    view[job["id"]] = job
            producer.join()
            self.assertEqual(failure, [])
            # now follow until every job added has ended or is gone
            deadline = time.monotonic() + 30
            while any(i not in gone and view.get(i, {}).get("state") not in ud.TERMINAL_STATES for i in added):
                event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
                if event is None:
                    pending = [i for i in added
                               if i not in gone and view.get(i, {}).get("state") not in ud.TERMINAL_STATES]
                    truth = {j["id"]: j for j in self.client.list(ids=pending)}
                    self.fail(f"events stopped before every job ended: {len(pending)} not ended, e.g. "
                              + "; ".join(f"{i}: seen {view.get(i, {}).get('state')}/{view.get(i, {}).get('revision')}"
                                          f" daemon {truth.get(i, {}).get('state')}/{truth.get(i, {}).get('revision')}"
                                          for i in pending[:5]))
                take(event)
        finally:
            stream.close()
        self.assertGreaterEqual(reconnects, 3)
        self.assertGreater(changed_while_away, 0, "no job changed while the subscriber was away")
        truth = {j["id"]: j for j in self.client.list(ids=added)}
        for job_id in added:
            if job_id in truth:
                self.assertIn(job_id, view, f"job {job_id} was never seen")
                self.assertEqual(view[job_id]["state"], truth[job_id]["state"], f"job {job_id}")
                self.assertEqual(view[job_id]["revision"], truth[job_id]["revision"], f"job {job_id}")
            else:
                self.assertIn(job_id, gone, f"job {job_id} was removed but never seen removed")
        for job_id in removed_ids:
            self.assertNotIn(job_id, truth)
            self.assertIn(job_id, gone)


    def test_slow_subscriber_overflows_fast_one_gets_everything(self) -> None:
        slow = self.client.events()
        self.addCleanup(slow.close)
        with self.client.events(kinds=["job.state"]) as fast:
            # about 5 KB of job.state per job (1 KB of metadata in each of its 3 states)
            jobs, errors = self.client.add_many(self.files(1500, 10), self.destination(),
                                                metadata={"note": "x" * 1000})
            self.assertEqual(errors, [])
            ids = {j["id"] for j in jobs}
            last: dict[int, dict] = {}
            deadline = time.monotonic() + 120
            while any(last.get(i, {}).get("state") not in ud.TERMINAL_STATES for i in ids):
                event = fast.next(timeout=max(0.1, deadline - time.monotonic()))
                self.assertIsNotNone(event, "the fast subscriber stopped getting events")
                if event.id in ids:
                    known = last.get(event.id)
                    self.assertTrue(known is None or event.revision > known["revision"])
                    last[event.id] = event.params
            self.assertEqual({j["state"] for j in last.values()}, {"completed"})
        with self.assertRaises(ud.SubscriptionOverflow):
            while True:
                self.assertIsNotNone(slow.next(timeout=30), "no events.overflow came")
        self.assertTrue(slow.closed)


    def test_example_queue_folder(self) -> None:
        photos = self.folder / "Photos"
        (photos / "trip day 1").mkdir(parents=True)
        (photos / ".cache").mkdir()
        for name in ("a.jpg", "b.jpg", "trip day 1/c #1.jpg", ".hidden", ".cache/d.jpg"):
            (photos / name).write_bytes(os.urandom(5000))
        out = self.folder / "example-out"
        script = HERE / "example_queue_folder.py"
        run = subprocess.run([sys.executable, str(script), str(photos), out.as_uri() + "/", "--socket",
                              self.daemon.socket], capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("queued 3 files as batch", run.stdout)
        self.assertIn("3 files in", run.stdout)
        self.assertIn("3 completed", run.stdout)
        copied = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
        self.assertEqual(copied, ["Photos/a.jpg", "Photos/b.jpg", "Photos/trip day 1/c #1.jpg"])
        # a failure makes it exit 1
        blocked = self.folder / "blocked-out"
        (blocked / "Photos").mkdir(parents=True)
        (blocked / "Photos" / "trip day 1").write_text("in the way")
        run = subprocess.run([sys.executable, str(script), str(photos), blocked.as_uri() + "/", "--socket",
                              self.daemon.socket], capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        self.assertIn("2 completed, 1 failed", run.stdout)
        self.assertIn("failed: Photos/trip day 1/c #1.jpg", run.stderr)


class FolderTests(DaemonTestCase):
    """A watched folder, `[folder drop]`: listed, its jobs named after it, paused and resumed."""

    config = "[daemon]\ntransfers = 1\n\n[folder drop]\npath = @ROOT@/drop\nto = file://@ROOT@/out/\nsettle = 200ms\n"

    def test_folders_pause_resume(self) -> None:
        (self.root / "drop").mkdir(mode=0o755, exist_ok=True)  # looked for every 5 s until there
        deadline = time.monotonic() + 20
        while self.client.folders()[0]["state"] != "watching":
            self.assertLess(time.monotonic(), deadline, self.client.folders())
            time.sleep(0.2)
        (self.root / "drop" / "a.txt").write_text("a\n")
        deadline = time.monotonic() + 20
        while not [j for j in self.client.list() if j.get("folder") == "drop" and j["state"] == "completed"]:
            self.assertLess(time.monotonic(), deadline, self.client.list())
            time.sleep(0.2)
        folder = self.client.folders()[0]
        self.assertEqual((folder["name"], folder["taken"], folder["uploaded"]), ("drop", 1, 1))
        self.assertTrue(folder["last_upload"]["source"].endswith("/drop/a.txt"), folder)
        self.assertEqual(self.client.pause_folder("drop")["state"], "paused")
        self.assertEqual(self.client.folders()[0]["state"], "paused")
        self.assertIn(self.client.resume_folder("drop")["state"], ("starting", "watching"))
        with self.assertRaises(ud.UploaddError) as caught:
            self.client.pause_folder("nope")
        self.assertEqual(caught.exception.code, ud.CODE_INVALID_PARAMS)


class RestartTests(DaemonTestCase):
    def test_client_token_across_restart(self) -> None:
        source = self.files(1)[0]
        first = self.client.add(source, self.destination(), client_token="app-upload-42", metadata={"n": "1"})
        again = self.client.add(source, self.destination(), client_token="app-upload-42", metadata={"n": "1"})
        self.assertEqual(again["id"], first["id"])
        # the same token for another upload is refused, and queues nothing
        with self.assertRaises(ud.UploaddError) as refused:
            self.client.add(source, self.destination(), client_token="app-upload-42", metadata={"n": "2"})
        self.assertEqual(refused.exception.code, -32602)
        self.assertIn("job %d" % first["id"], str(refused.exception))
        self.client.wait(first["id"], timeout=60)
        held, _ = self.held_job()
        self.daemon.stop()
        self.daemon.start()
        # the client connects again by itself on its next call
        self.assertEqual(self.client.hello()["name"], "uploadd")
        with ud.Client(self.daemon.socket) as client:
            # revisions survive the restart, and go on growing from there
            self.assertEqual(client.get(held["id"])["revision"], held["revision"])
            self.assertGreater(client.resume(held["id"])["revision"], held["revision"])
            after = client.add(source, self.destination(), client_token="app-upload-42", metadata={"n": "1"})
            self.assertEqual(after["id"], first["id"])
            self.assertEqual(after["client_token"], "app-upload-42")
            self.assertEqual(after["metadata"], {"n": "1"})
            self.assertEqual(after["state"], "completed")
            other = client.add(source, self.destination(), client_token="app-upload-43")
            self.assertNotEqual(other["id"], first["id"])
            self.assertGreaterEqual(after["revision"], first["revision"])


# ------------------------------------------------------------------------------------------------


class _RawSubscriber:
    """An events.subscribe on a plain socket, recording what the daemon sent, in order."""

    def __init__(self, path: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{}}\n')
        self.messages: list = []
        self.buffer = b""
        self._answered = False
        while not self._answered:
            self._read(None)

    def _read(self, timeout) -> bool:
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(1 << 16)
        except (TimeoutError, socket.timeout):
            return False
        if not chunk:
            return False
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "id" in message:
                self._answered = True
            else:
                self.messages.append(message)
        return True

    def revisions(self, ids) -> dict[int, list]:
        while self._read(0.5):
            pass
        out: dict[int, list] = {i: [] for i in ids}
        for message in self.messages:
            params = message.get("params") or {}
            if params.get("id") in out and "revision" in params:
                out[params["id"]].append(params["revision"])
        return out

    def close(self) -> None:
        self.sock.close()


def _drain(stream: ud.EventStream, count: int, timeout: float = 30) -> list:
    events = []
    deadline = time.monotonic() + timeout
    while len(events) < count:
        event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
        if event is None:
            break
        events.append(event)
    return events


def _drain_until(stream: ud.EventStream, job_id: int, state: str, timeout: float = 30) -> list:
    events = []
    deadline = time.monotonic() + timeout
    while True:
        event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
        if event is None:
            raise AssertionError(f"job {job_id} did not reach {state}; saw {[e.params for e in events]}")
        if event.id != job_id:
            continue
        events.append(event)
        if event.kind == "job.state" and event.params["state"] == state:
            return events


if __name__ == "__main__":
    unittest.main()
