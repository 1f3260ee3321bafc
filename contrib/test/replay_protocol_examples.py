#!/usr/bin/env python3
"""Replays every example of contrib/PROTOCOL.md against a real uploadd, so the document cannot drift.

An example is a fenced block right after a line `<!-- example: NAME -->`. In it:

    → JSON      a request (or batch, or notification) the client sends, as one line
    ← JSON      a line the client must receive: an answer, or a notification
    ⏳ job N is STATE     the client waits until job N is in STATE (polled with job.get)
    ↻ TEXT      uploadd is stopped (SIGTERM) and started again; the client connects anew
    ⇄ TEXT      the client closes its connection and opens a new one
    # TEXT      a comment

A message may go on over the following lines (pretty-printed JSON); it is sent as one line.
Answers are matched in order; notifications in order per job (those of different jobs may
interleave, and may come before or after the answer of the request that caused them). Unlisted
`job.progress` notifications are ignored, and so are notifications that come after the last one
the example lists for that job, and those a client drops by the revision rule after a snapshot
(an event of a job whose revision is not above the one the snapshot showed).

Expected values are compared structurally:
    "…"                 any value (the key must be there)
    "text … more"       a string; each … stands for any characters
    "…": "…"            (as a member) the object may have further members
    [..., "…"]          (as the last element) the array may have further elements
    $DIR                the example's scratch folder, in requests and expected lines alike
Any other difference, a missing or an unexpected member included, is a mismatch.

Each example runs against a daemon of its own, started on a fresh scratch folder with the fixture
files and config below (PROTOCOL.md describes them). The daemon is always killed at the end.

Usage: replay_protocol_examples.py [--doc FILE] [--only NAME]... [--keep] [--verbose]
Env:   UPLOADD_BIN  the folder holding uploadd (default: <repo>/.build/debug), or uploadd itself
Exit:  0 when every example matched; 1 on any mismatch, on a setup error, or with no examples.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DOC = os.path.join(REPO, "contrib", "PROTOCOL.md")
WILDCARD = "…"
ANSWER_TIMEOUT = 15.0
WAIT_TIMEOUT = 30.0
START_TIMEOUT = 20.0

# The fixture set every example starts with (PROTOCOL.md, "The examples", lists it).
FIXTURE_FILES: dict[str, bytes] = {
    "photos/a.jpg": bytes(range(256)) * 8,  # 2048 bytes
    "photos/b.jpg": bytes(range(256)) * 16,  # 4096 bytes
    "photos/c.jpg": bytes(range(256)) * 32,  # 8192 bytes
    "videos/clip.mp4": bytes(range(256)) * 32768,  # 8 MiB: takes a moment, while later jobs wait
    "notes.txt": b"remember the milk\n",  # 18 bytes
    "not-a-folder": b"a file where a destination wants a folder\n",
    "inbox/.keep": b"",  # the watched folder; hidden files are not taken
}
FIXTURE_CONFIG = """\
[daemon]
transfers = 1

[remote backup]
protocol = file
url = file://$DIR/backup/

[folder inbox]
path = $DIR/inbox
to = backup:inbox/
"""

# Variables of the caller's environment that would change what the daemon does.
SCRUBBED_ENV = [
    "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
    "CREDENTIALS_DIRECTORY", "STATE_DIRECTORY", "CACHE_DIRECTORY", "CONFIGURATION_DIRECTORY",
    "UPLOADD_SOCKET", "DBUS_SESSION_BUS_ADDRESS", "INVOCATION_ID", "JOURNAL_STREAM",
]


class Failure(Exception):
    """An example did not go as the document says."""


# ---------------------------------------------------------------------------------------------
# Parsing the document


@dataclass
class Step:
    kind: str  # "send", "expect", "wait", "restart", "reconnect"
    text: str
    line: int  # line number in the document
    wait_ids: list[int] = field(default_factory=list)
    wait_state: str = ""


@dataclass
class Example:
    name: str
    line: int
    steps: list[Step]


MARKER = re.compile(r"^<!--\s*example:\s*([A-Za-z0-9_.-]+)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
WAIT = re.compile(r"^jobs?\s+([0-9][0-9,\sand]*?)\s+(?:is|are)\s+([a-z]+)\s*$")
PREFIXES = {"→": "send", "←": "expect", "⏳": "wait", "↻": "restart", "⇄": "reconnect"}


def parse_document(path: str) -> list[Example]:
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    examples: list[Example] = []
    names: set[str] = set()
    pending: tuple[str, int] | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = MARKER.match(line.strip())
        if marker:
            if pending:
                raise Failure(f"{path}:{pending[1]}: example '{pending[0]}' has no fenced block after it")
            pending = (marker.group(1), index + 1)
            index += 1
            continue
        fence = FENCE.match(line)
        if fence:
            fence_chars = fence.group(2)
            body_start = index + 1
            end = body_start
            while end < len(lines) and not lines[end].strip().startswith(fence_chars):
                end += 1
            if end >= len(lines):
                raise Failure(f"{path}:{index + 1}: a fenced block that never ends")
            body = lines[body_start:end]
            if pending:
                name, marker_line = pending
                if name in names:
                    raise Failure(f"{path}:{marker_line}: a second example named '{name}'")
                names.add(name)
                examples.append(Example(name, marker_line, parse_block(path, body, body_start + 1)))
                pending = None
            elif any(text.startswith(("→ ", "← ")) for text in body):
                raise Failure(
                    f"{path}:{index + 1}: a block with → / ← lines but no <!-- example: NAME --> before it; "
                    "every such block is replayed, so give it a name (or write it otherwise)")
            index = end + 1
            continue
        if pending and line.strip():
            raise Failure(f"{path}:{pending[1]}: example '{pending[0]}' must be followed by its fenced block")
        index += 1
    if pending:
        raise Failure(f"{path}:{pending[1]}: example '{pending[0]}' has no fenced block after it")
    return examples


def parse_block(path: str, body: list[str], first_line: int) -> list[Step]:
    steps: list[Step] = []
    current: Step | None = None
    for offset, raw in enumerate(body):
        number = first_line + offset
        stripped = raw.strip()
        if not stripped:
            continue
        head = stripped[0]
        if head in PREFIXES and (len(stripped) == 1 or stripped[1] == " "):
            kind = PREFIXES[head]
            text = stripped[1:].strip()
            step = Step(kind, text, number)
            if kind == "wait":
                match = WAIT.match(text)
                if not match:
                    raise Failure(f"{path}:{number}: write a wait as '⏳ job N is STATE' (or 'jobs 1, 2 are STATE')")
                step.wait_ids = [int(n) for n in re.findall(r"\d+", match.group(1))]
                step.wait_state = match.group(2)
            steps.append(step)
            current = step if kind in ("send", "expect") else None
        elif stripped.startswith("#"):
            continue
        elif current is not None:
            current.text += "\n" + raw
        else:
            raise Failure(f"{path}:{number}: a line that is neither →, ←, ⏳, ↻, ⇄, # nor the rest of a message")
    for step in steps:
        if step.kind == "expect":
            try:
                json.loads(step.text)
            except json.JSONDecodeError as error:
                raise Failure(f"{path}:{step.line}: the expected line is not JSON: {error}") from None
    if not any(step.kind == "send" for step in steps):
        raise Failure(f"{path}:{first_line}: an example without a request (→)")
    return steps


# ---------------------------------------------------------------------------------------------
# Comparing


def substitute(value: Any, scratch: str) -> Any:
    if isinstance(value, str):
        return value.replace("$DIR", scratch)
    if isinstance(value, list):
        return [substitute(item, scratch) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, scratch) for key, item in value.items()}
    return value


def mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where `actual` differs from `expected` (wildcards and $DIR already applied)."""
    where = path or "(top)"
    if isinstance(expected, str) and expected == WILDCARD:
        return []
    if isinstance(expected, str) and WILDCARD in expected:
        pattern = ".*".join(re.escape(part) for part in expected.split(WILDCARD))
        if isinstance(actual, str) and re.fullmatch(pattern, actual, re.DOTALL):
            return []
        return [f"{where}: expected {json.dumps(expected, ensure_ascii=False)}, "
                f"got {json.dumps(actual, ensure_ascii=False)}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {json.dumps(actual, ensure_ascii=False)}"]
        found: list[str] = []
        open_ended = expected.get(WILDCARD) == WILDCARD
        for key, value in expected.items():
            if key == WILDCARD and open_ended:
                continue
            if key not in actual:
                found.append(f"{path}.{key}: missing (expected {json.dumps(value, ensure_ascii=False)})")
            else:
                found += mismatches(value, actual[key], f"{path}.{key}")
        if not open_ended:
            for key in actual:
                if key not in expected:
                    found.append(f"{path}.{key}: not in the document "
                                 f"(got {json.dumps(actual[key], ensure_ascii=False)})")
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected an array, got {json.dumps(actual, ensure_ascii=False)}"]
        open_ended = bool(expected) and expected[-1] == WILDCARD
        items = expected[:-1] if open_ended else expected
        if len(actual) < len(items) or (not open_ended and len(actual) != len(items)):
            return [f"{where}: expected {len(items)}{'+' if open_ended else ''} elements, got {len(actual)}"]
        found = []
        for number, item in enumerate(items):
            found += mismatches(item, actual[number], f"{path}[{number}]")
        return found
    if type(expected) is bool or type(actual) is bool or expected is None or actual is None:
        same = type(expected) is type(actual) and expected == actual
    elif isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        same = expected == actual
    else:
        same = type(expected) is type(actual) and expected == actual
    if same:
        return []
    return [f"{where}: expected {json.dumps(expected, ensure_ascii=False)}, got {json.dumps(actual, ensure_ascii=False)}"]


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def is_notification(message: Any) -> bool:
    return isinstance(message, dict) and "method" in message and "id" not in message


def job_of(notification: dict) -> Any:
    params = notification.get("params")
    if isinstance(params, dict) and "id" in params:
        return params["id"]
    return ("method", notification.get("method"))


# ---------------------------------------------------------------------------------------------
# The daemon and a client


def find_uploadd() -> str:
    configured = os.environ.get("UPLOADD_BIN", os.path.join(REPO, ".build", "debug"))
    binary = os.path.join(configured, "uploadd") if os.path.isdir(configured) else configured
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise Failure(f"no uploadd at {binary}; build it (swift build) or set UPLOADD_BIN to its folder")
    return binary


class Daemon:
    def __init__(self, binary: str, scratch: str):
        self.binary = binary
        self.scratch = scratch
        self.socket_path = os.path.join(scratch, "run", "control.sock")
        self.log_path = os.path.join(scratch, "uploadd.log")
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        environment = {key: value for key, value in os.environ.items() if key not in SCRUBBED_ENV}
        environment["XDG_RUNTIME_DIR"] = os.path.join(self.scratch, "run")
        # No desktop notifications on the session bus of whoever runs the replay.
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + os.path.join(self.scratch, "no-session-bus")
        log = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(
                [self.binary, "--state-dir", os.path.join(self.scratch, "state"),
                 "--cache-dir", os.path.join(self.scratch, "cache"), "--socket", self.socket_path,
                 "--config", os.path.join(self.scratch, "uploadd.conf")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=environment,
                start_new_session=True)
        finally:
            log.close()
        RUNNING.append(self)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise Failure(f"uploadd exited with status {self.process.returncode} at start\n{self.log_tail()}")
            try:
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.connect(self.socket_path)
                probe.close()
                return
            except OSError:
                time.sleep(0.05)
        raise Failure(f"uploadd did not listen on {self.socket_path} within {START_TIMEOUT:.0f}s\n{self.log_tail()}")

    def stop(self) -> None:
        process = self.process
        if process is None:
            return
        self.process = None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        # Anything it started and left behind (helpers, hooks) goes with it.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self in RUNNING:
            RUNNING.remove(self)

    def log_tail(self, count: int = 30) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                tail = handle.read().splitlines()[-count:]
        except OSError:
            return "(no log)"
        return "uploadd's log (last lines):\n" + "\n".join("  | " + line for line in tail)


RUNNING: list[Daemon] = []


def stop_all() -> None:
    for daemon in list(RUNNING):
        daemon.stop()


class Client:
    def __init__(self, path: str, verbose: bool):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buffer = b""
        self.closed = False
        self.verbose = verbose

    def send(self, line: str) -> None:
        if self.verbose:
            print(f"    → {line}")
        self.sock.sendall(line.encode("utf-8") + b"\n")

    def receive(self, timeout: float) -> str | None:
        """The next line, or None when none came within `timeout` (or the daemon closed)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            if self.closed:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                self.closed = True
                continue
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        text = line.decode("utf-8", errors="replace")
        if self.verbose:
            print(f"    ← {text}")
        return text

    def call(self, method: str, params: dict) -> Any:
        self.send(json.dumps({"jsonrpc": "2.0", "id": "replay", "method": method, "params": params}))
        while True:
            line = self.receive(ANSWER_TIMEOUT)
            if line is None:
                raise Failure(f"no answer to {method} within {ANSWER_TIMEOUT:.0f}s")
            message = json.loads(line)
            if isinstance(message, dict) and message.get("id") == "replay":
                return message

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Running an example


def make_scratch(keep: bool) -> str:
    scratch = tempfile.mkdtemp(prefix="uploadd-replay-")
    if len(scratch) > 60:  # socket paths are limited to 107 bytes
        shutil.rmtree(scratch, ignore_errors=True)
        scratch = tempfile.mkdtemp(prefix="uploadd-replay-", dir="/tmp")
    os.mkdir(os.path.join(scratch, "run"), 0o700)
    os.chmod(os.path.join(scratch, "run"), 0o700)
    for name, content in FIXTURE_FILES.items():
        path = os.path.join(scratch, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)
    with open(os.path.join(scratch, "uploadd.conf"), "w", encoding="utf-8") as handle:
        handle.write(FIXTURE_CONFIG.replace("$DIR", scratch))
    return scratch


class Run:
    def __init__(self, example: Example, daemon: Daemon, doc: str, verbose: bool):
        self.example = example
        self.daemon = daemon
        self.doc = doc
        self.verbose = verbose
        self.scratch = daemon.scratch
        self.client = Client(daemon.socket_path, verbose)
        self.answers: list[Any] = []
        self.notifications: list[dict] = []
        self.matched: set[int] = set()  # indexes into notifications
        # The revision of each job in the last snapshot (events.subscribe with snapshot): an event
        # not above it raced with the snapshot, and is dropped, as the document tells clients to.
        self.snapshot: dict[Any, int] = {}
        self.last_method: str | None = None
        self.expects_progress = any(
            step.kind == "expect" and '"job.progress"' in step.text for step in example.steps)

    def where(self, step: Step) -> str:
        return f"{os.path.relpath(self.doc)}:{step.line}"

    def execute(self) -> None:
        steps = self.example.steps
        index = 0
        while index < len(steps):
            step = steps[index]
            if step.kind == "send":
                group = []
                index += 1
                while index < len(steps) and steps[index].kind == "expect":
                    group.append(steps[index])
                    index += 1
                self.send(step)
                self.expect(step, group)
                continue
            if step.kind == "expect":
                self.expect(step, [step])
            elif step.kind == "wait":
                self.wait(step)
            elif step.kind == "restart":
                self.client.close()
                self.daemon.stop()
                self.daemon.start()
                self.reconnect()
            elif step.kind == "reconnect":
                self.client.close()
                self.reconnect()
            index += 1
        # An answer nobody asked for (the document is missing one) shows up here.
        self.drain(0.3)
        if self.answers:
            raise Failure(f"after the last step, an answer the document does not show:\n{pretty(self.answers[0])}")

    def reconnect(self) -> None:
        self.client = Client(self.daemon.socket_path, self.verbose)
        self.answers = []
        self.notifications = []
        self.matched = set()
        self.snapshot = {}

    def send(self, step: Step) -> None:
        text = step.text.replace("$DIR", self.scratch)
        try:
            request = json.loads(text)
            line = json.dumps(request, ensure_ascii=False, separators=(",", ":"))
            self.last_method = request.get("method") if isinstance(request, dict) else None
        except json.JSONDecodeError:
            self.last_method = None
            line = " ".join(part.strip() for part in text.split("\n"))  # deliberately not JSON
        self.client.send(line)

    def take(self, line: str) -> None:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            raise Failure(f"the daemon sent a line that is not JSON: {line!r}") from None
        if is_notification(message):
            if message.get("method") == "job.progress" and not self.expects_progress:
                return
            self.notifications.append(message)
        else:
            self.answers.append(message)

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            line = self.client.receive(max(0.0, deadline - time.monotonic()))
            if line is None:
                return
            self.take(line)

    def expect(self, request: Step, group: list[Step]) -> None:
        deadline = time.monotonic() + ANSWER_TIMEOUT
        for step in group:
            expected = substitute(json.loads(step.text), self.scratch)
            while True:
                outcome = self.try_match(step, expected)
                if outcome is True:
                    break
                # A line that differs stays first in line (answers come in order, and so do a
                # job's notifications): no need to wait for the deadline.
                if isinstance(outcome, tuple) or time.monotonic() >= deadline or (self.client.closed and b"\n" not in self.client.buffer):
                    self.fail_expect(request, step, expected, outcome)
                line = self.client.receive(max(0.0, deadline - time.monotonic()))
                if line is not None:
                    self.take(line)

    def try_match(self, step: Step, expected: Any) -> bool | tuple[Any, list[str]] | None:
        """True when matched; else what came instead (and how it differs), or None when nothing did."""
        if is_notification(expected):
            wanted_job = job_of(expected)
            for number, message in enumerate(self.notifications):
                if number in self.matched or job_of(message) != wanted_job:
                    continue
                if self.is_stale(message):
                    self.matched.add(number)
                    continue
                found = mismatches(expected, message)
                if found:
                    return (message, found)
                self.matched.add(number)
                return True
            return None
        if not self.answers:
            return None
        message = self.answers[0]
        found = mismatches(expected, message)
        if found:
            return (message, found)
        self.answers.pop(0)
        if self.last_method == "events.subscribe" and isinstance(message, dict):
            for job in (message.get("result") or {}).get("jobs") or []:
                if isinstance(job, dict) and isinstance(job.get("revision"), int):
                    self.snapshot[job.get("id")] = job["revision"]
        return True

    def is_stale(self, notification: dict) -> bool:
        """A job's event whose revision is not above the one in the snapshot already taken."""
        params = notification.get("params")
        if notification.get("method") not in ("job.state", "job.progress") or not isinstance(params, dict):
            return False
        known = self.snapshot.get(params.get("id"))
        revision = params.get("revision")
        if known is None or not isinstance(revision, int):
            return False
        return revision < known if notification["method"] == "job.progress" else revision <= known

    def fail_expect(self, request: Step, step: Step, expected: Any, outcome: Any) -> None:
        report = [f"{self.where(step)}: the line expected after {self.where(request)} did not come."]
        report.append("expected:\n" + indent(pretty(expected)))
        if isinstance(outcome, tuple):
            actual, found = outcome
            report.append("got instead:\n" + indent(pretty(actual)))
            report.append("differences:\n" + "\n".join("  - " + item for item in found))
        else:
            report.append(f"got: nothing within {ANSWER_TIMEOUT:.0f}s"
                          + (" (the daemon closed the connection)" if self.client.closed else ""))
            unmatched = [m for n, m in enumerate(self.notifications) if n not in self.matched]
            if unmatched:
                report.append("notifications received and not matched:\n"
                              + "\n".join(indent(json.dumps(m, ensure_ascii=False)) for m in unmatched))
            if self.answers:
                report.append("answers received and not matched:\n"
                              + "\n".join(indent(json.dumps(m, ensure_ascii=False)) for m in self.answers))
        raise Failure("\n".join(report))

    def wait(self, step: Step) -> None:
        watcher = Client(self.daemon.socket_path, False)
        try:
            deadline = time.monotonic() + WAIT_TIMEOUT
            for job in step.wait_ids:
                while True:
                    answer = watcher.call("job.get", {"id": job})
                    state = (answer.get("result") or {}).get("state")
                    if state == step.wait_state:
                        break
                    if time.monotonic() >= deadline:
                        raise Failure(f"{self.where(step)}: job {job} is still {state or answer.get('error')}, "
                                      f"not {step.wait_state}, after {WAIT_TIMEOUT:.0f}s")
                    time.sleep(0.05)
        finally:
            watcher.close()


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.split("\n"))


def run_example(example: Example, binary: str, doc: str, keep: bool, verbose: bool) -> str | None:
    """None when the example matched; else the report."""
    scratch = make_scratch(keep)
    daemon = Daemon(binary, scratch)
    run: Run | None = None
    try:
        daemon.start()
        run = Run(example, daemon, doc, verbose)
        run.execute()
        return None
    except (Failure, OSError) as failure:
        kept = f"\n(scratch folder kept: {scratch})" if keep else "\n(--keep keeps the scratch folder)"
        return f"{failure}{kept}\n{daemon.log_tail()}"
    finally:
        if run is not None:
            run.client.close()
        daemon.stop()
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description="Replay the examples of PROTOCOL.md against a real uploadd.")
    parser.add_argument("--doc", default=DEFAULT_DOC, help="the document (default: contrib/PROTOCOL.md)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this example")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folders")
    parser.add_argument("--verbose", "-v", action="store_true", help="show every line sent and received")
    arguments = parser.parse_args()

    atexit.register(stop_all)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda signum, frame: sys.exit(1))
    try:
        examples = parse_document(arguments.doc)
        if not examples:
            raise Failure(f"{arguments.doc} has no examples (<!-- example: NAME --> before a fenced block)")
        if arguments.only:
            unknown = sorted(set(arguments.only) - {example.name for example in examples})
            if unknown:
                raise Failure(f"no example named {', '.join(unknown)}")
            examples = [example for example in examples if example.name in arguments.only]
        binary = find_uploadd()
    except Failure as failure:
        print(f"replay: {failure}", file=sys.stderr)
        return 1

    failed = []
    for example in examples:
        started = time.monotonic()
        report = run_example(example, binary, arguments.doc, arguments.keep, arguments.verbose)
        took = time.monotonic() - started
        if report is None:
            print(f"ok    {example.name} ({took:.1f}s)")
        else:
            failed.append(example.name)
            print(f"FAIL  {example.name} ({took:.1f}s)")
            print(indent(report))
    print(f"{len(examples) - len(failed)} of {len(examples)} examples matched"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        stop_all()
