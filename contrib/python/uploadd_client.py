"""A client for uploadd, the Linux upload daemon, in plain Python 3.11 (standard library only).

Copy this one file next to your program (or anywhere on ``sys.path``); it needs nothing else.

uploadd keeps a durable queue of uploads and takes commands on a Unix socket: JSON-RPC 2.0, one
JSON object (or one batch array) per line. This module speaks that protocol for you::

    import uploadd_client as ud

    with ud.Client() as client:                       # finds the socket as uploadctl does
        job = client.add("/home/me/photo.jpg", "file:///srv/backup/",
                         client_token="photo-2026-001", metadata={"album": "2026"})
        print(job["id"], job["state"])
        final = client.wait(job["id"], timeout=600)[0]  # returns once it completed/failed/canceled
        print(final["state"], final.get("result"))

        for event in client.events(ids=[job["id"]], snapshot=True):
            print(event.kind, event.params)           # job.state / job.progress / job.removed

Results are the daemon's JSON as dicts and lists (documented on each method); ``Job.from_dict``
gives a typed, read-only view of a job dict.

Errors:

* ``UploaddNotRunning``: nothing listens on the socket (the message names the path tried).
* ``UploaddUntrusted``: the socket's folder or the process serving it is not yours.
* ``UploaddError``: the daemon answered with a JSON-RPC error; ``.code`` is its code (the ``CODE_*``
  constants below), ``.message`` says what is wrong, ``.data`` is extra data or None.
* ``ConnectionClosed``: the daemon closed the connection (it stopped, or dropped us).
* ``SubscriptionOverflow``: an event subscriber read too slowly and was dropped; subscribe again
  with ``snapshot=True`` to pick up where you are.
* ``ProtocolError``: the daemon answered something this module does not understand.

All of them derive from ``UploaddClientError``.
"""

from __future__ import annotations

import datetime as _dt
import itertools as _itertools
import json as _json
import os as _os
import socket as _socket
import stat as _stat
import struct as _struct
import threading as _threading
import time as _time
from collections import deque as _deque
from dataclasses import dataclass, field as _field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

__all__ = [
    "Client", "Job", "Event", "EventStream",
    "UploaddClientError", "UploaddNotRunning", "UploaddUntrusted", "UploaddError", "ConnectionClosed",
    "SubscriptionOverflow", "ProtocolError",
    "resolve_socket_path", "join_destination", "source_identity", "TERMINAL_STATES", "JOB_STATES", "EVENT_KINDS",
    "CODE_PARSE_ERROR", "CODE_INVALID_REQUEST", "CODE_METHOD_NOT_FOUND", "CODE_INVALID_PARAMS",
    "CODE_INTERNAL_ERROR", "CODE_JOB_NOT_FOUND", "CODE_INVALID_TRANSITION", "CODE_SOURCE_ERROR",
    "CODE_NO_SPACE", "CODE_SHUTTING_DOWN", "CODE_DENIED", "CODE_CONFIG_ERROR", "CODE_BUSY",
]

# --------------------------------------------------------------------------------------------
# Protocol constants
# --------------------------------------------------------------------------------------------

#: The socket's file name inside its folder.
SOCKET_FILE_NAME = "control.sock"
#: The daemon refuses (and closes the connection on) a request line longer than this.
MAX_LINE_LENGTH = 1 << 20
#: How many ``job.add`` calls ``Client.add_many`` puts in one JSON-RPC batch.
ADD_BATCH_SIZE = 500

#: The daemon's limit of a request line; the most bytes of ``sources`` one ``job.add`` carries is
#: half of it, less when the shared options leave less room.
LINE_LIMIT = 1 << 20
#: The most bytes of shared options times the files of one ``job.add`` of ``sources`` (each file
#: gets a copy): the daemon refuses a request past it.
SOURCES_SHARED_BYTES = 16 << 20


def _runs_of_sources(sources: list, shared_bytes: int) -> list[list]:
    """``sources`` cut into runs that each fit one request beside shared options of
    ``shared_bytes``: long paths would overflow a line, and big options times many files would be
    refused."""
    room = min(LINE_LIMIT // 2, LINE_LIMIT - shared_bytes - 4096)
    most = min(10_000, max(1, SOURCES_SHARED_BYTES // max(shared_bytes, 1)))
    runs: list[list] = []
    size = 0
    for item in sources:
        item_size = len(_encode(item)) + 1
        if runs and size + item_size <= room and len(runs[-1]) < most:
            runs[-1].append(item)
            size += item_size
        else:
            runs.append([item])
            size = item_size
    return runs

#: Every job state. queued/running/paused are live; the others are terminal.
JOB_STATES = ("queued", "running", "paused", "completed", "failed", "canceled")
#: States in which a job does nothing more (until it is retried or removed).
TERMINAL_STATES = frozenset({"completed", "failed", "canceled"})
#: The event kinds ``events.subscribe`` can filter on.
EVENT_KINDS = ("job.state", "job.progress", "job.removed")

# JSON-RPC error codes: the spec's, then uploadd's own (-32001 and down).
CODE_PARSE_ERROR = -32700
CODE_INVALID_REQUEST = -32600
CODE_METHOD_NOT_FOUND = -32601
#: Bad params: an unknown key, a wrong type, a relative source, metadata over its limits...
CODE_INVALID_PARAMS = -32602
CODE_INTERNAL_ERROR = -32603
#: No job with that ID (never was, or removed).
CODE_JOB_NOT_FOUND = -32001
#: The job cannot do that from its state (pause a completed job...).
CODE_INVALID_TRANSITION = -32002
#: The source file cannot be read or snapshotted.
CODE_SOURCE_ERROR = -32003
#: No room for the snapshot (with ``snapshot="copy"``).
CODE_NO_SPACE = -32004
#: The daemon is stopping.
CODE_SHUTTING_DOWN = -32005
CODE_DENIED = -32006
#: ``daemon.reload``: the config file has errors; the config in use stays.
CODE_CONFIG_ERROR = -32007
#: The daemon serves as many clients at once as it takes; try again once some have closed.
CODE_BUSY = -32008

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class UploaddClientError(Exception):
    """The base of every exception this module raises."""


class UploaddNotRunning(UploaddClientError, ConnectionError):
    """Nothing answers on the control socket: the daemon is not running (or listens elsewhere).

    ``path`` is the socket path tried, ``reason`` why connecting failed.
    """

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(
            f"uploadd is not running: cannot connect to {path} ({reason}); start it with `uploadd` "
            f"or `systemctl --user start uploadd.socket`, or name its socket (path=... or $UPLOADD_SOCKET)")


class UploaddUntrusted(UploaddClientError, PermissionError):
    """The socket is not safe to talk to: its folder (``/tmp/uploadd-UID``) is a symlink, someone
    else's or open to others, or the process serving it belongs to another user."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"refusing to use {path}: {reason}")


class UploaddError(UploaddClientError):
    """A JSON-RPC error answered by the daemon.

    ``code`` is the daemon's error code (compare with the ``CODE_*`` constants), ``message`` a
    sentence saying what is wrong, ``data`` any extra data (often None).
    """

    def __init__(self, code: int, message: str, data: Any = None):
        self.code = code
        self.message = message
        self.data = data
        super().__init__(code, message, data)

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    @classmethod
    def from_object(cls, error: Any) -> "UploaddError":
        if not isinstance(error, dict):
            return cls(CODE_INTERNAL_ERROR, f"malformed error object: {error!r}")
        return cls(int(error.get("code", CODE_INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))


class ConnectionClosed(UploaddClientError, ConnectionError):
    """The daemon closed the connection (it is stopping, or it dropped this client)."""


class SubscriptionOverflow(ConnectionClosed):
    """The daemon dropped an event subscription that fell too far behind (``events.overflow``).

    Events were lost: subscribe again with ``snapshot=True`` to learn the current state of the jobs,
    then go on from there. ``message`` is the daemon's explanation.
    """

    def __init__(self, message: str):
        self.message = message
        super().__init__(f"event subscription overflowed: {message}; resubscribe with snapshot=True")


class ProtocolError(UploaddClientError):
    """The daemon sent something that is not what the protocol says (or not JSON at all)."""


# --------------------------------------------------------------------------------------------
# Socket location
# --------------------------------------------------------------------------------------------


def source_identity(path: str | _os.PathLike, follow_symlinks: bool = False) -> str | None:
    """``"DEVICE:INODE"`` of the file at ``path`` (the symlink itself unless ``follow_symlinks``),
    for ``job.add``'s ``source_identity``; None when it cannot be stat'ed (the daemon says why)."""
    try:
        info = _os.stat(path, follow_symlinks=follow_symlinks)
    except OSError:
        return None
    return f"{info.st_dev}:{info.st_ino}"


def fallback_directory(uid: int | None = None) -> str:
    """``/tmp/uploadd-UID``: where the socket is when there is no runtime directory."""
    return f"/tmp/uploadd-{_os.getuid() if uid is None else uid}"


def resolve_socket_path(path: str | _os.PathLike | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The control socket's path, by the same rules as uploadd and uploadctl.

    1. ``path`` when given (and not empty);
    2. else ``$UPLOADD_SOCKET`` when set and not empty;
    3. else ``$XDG_RUNTIME_DIR/uploadd/control.sock`` when ``$XDG_RUNTIME_DIR`` is an absolute
       path to an existing directory;
    4. else ``/tmp/uploadd-UID/control.sock`` (UID: your numeric user ID).
    """
    env = _os.environ if environ is None else environ
    if path is not None and _os.fspath(path) != "":
        return _os.fspath(path)
    explicit = env.get("UPLOADD_SOCKET", "")
    if explicit:
        return explicit
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/") and _os.path.isdir(runtime):
        return (runtime if runtime.endswith("/") else runtime + "/") + "uploadd/" + SOCKET_FILE_NAME
    return fallback_directory() + "/" + SOCKET_FILE_NAME


def _folder_problem(folder: str) -> str | None:
    """Why ``folder`` must not hold our socket (as uploadctl checks the /tmp fallback), or None."""
    try:
        info = _os.lstat(folder)
    except OSError:
        return None  # does not exist: connecting fails with a clearer message
    if _stat.S_ISLNK(info.st_mode):
        return f"{folder} is a symlink"
    if not _stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder"
    if info.st_uid != _os.getuid():
        return f"{folder} belongs to uid {info.st_uid}, not to uid {_os.getuid()}"
    if info.st_mode & 0o077:
        return f"{folder} lets group or others in (mode {_stat.S_IMODE(info.st_mode):o}, not 700)"
    return None


# --------------------------------------------------------------------------------------------
# One connection: lines out, JSON messages in
# --------------------------------------------------------------------------------------------


class _Connection:
    """A blocking NDJSON connection to the control socket."""

    def __init__(self, path: str):
        self.path = path
        folder = _os.path.dirname(path)
        if folder == fallback_directory():
            problem = _folder_problem(folder)
            if problem:
                raise UploaddUntrusted(path, problem)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except (OSError, ValueError) as error:
            sock.close()
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise UploaddNotRunning(path, reason) from None
        # Whoever listens there gets our commands (passwords included): only our own daemon, or root's.
        try:
            creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _struct.calcsize("3i"))
            pid, uid, _gid = _struct.unpack("3i", creds)
        except OSError as error:
            sock.close()
            raise UploaddUntrusted(path, f"cannot tell who serves it ({error.strerror})") from None
        if uid not in (_os.getuid(), 0):
            sock.close()
            raise UploaddUntrusted(
                path, f"it is served by uid {uid} (pid {pid}), not by you (uid {_os.getuid()}) or root")
        self.sock = sock
        self._buffer = bytearray()
        self._lines: _deque[bytes] = _deque()
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass

    def send_line(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionClosed(f"the connection to {self.path} is closed")
        self.sock.settimeout(None)
        try:
            self.sock.sendall(data + b"\n")
        except (BrokenPipeError, ConnectionResetError) as error:
            self.close()
            closed = ConnectionClosed(f"uploadd closed the connection ({error.strerror})")
            closed.unsent = True  # the daemon did not get this line
            raise closed from None

    def read_message(self, deadline: float | None = None) -> Any:
        """The next JSON value received; None when ``deadline`` (time.monotonic()) passes first."""
        while not self._lines:
            if self.closed:
                raise ConnectionClosed(f"the connection to {self.path} is closed")
            if deadline is None:
                self.sock.settimeout(None)
            else:
                remaining = deadline - _time.monotonic()
                if remaining <= 0:
                    return None
                self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except (TimeoutError, _socket.timeout):
                return None
            except InterruptedError:
                continue
            except (ConnectionResetError, OSError) as error:
                self.close()
                raise ConnectionClosed(f"uploadd closed the connection ({error.strerror or error})") from None
            if not chunk:
                self.close()
                raise ConnectionClosed("uploadd closed the connection")
            self._buffer += chunk
            start = 0
            while True:
                end = self._buffer.find(b"\n", start)
                if end < 0:
                    break
                line = bytes(self._buffer[start:end])
                start = end + 1
                if line.strip():
                    self._lines.append(line)
            del self._buffer[:start]
        line = self._lines.popleft()
        try:
            return _json.loads(line)
        except ValueError as error:
            raise ProtocolError(f"uploadd sent a line that is not JSON ({error}): {line[:200]!r}") from None


def _encode(value: Any) -> bytes:
    return _json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# --------------------------------------------------------------------------------------------
# Typed views
# --------------------------------------------------------------------------------------------


def _parse_time(value: Any) -> _dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Job:
    """A read-only, typed view of a job object (what ``get``, ``list``, ``add`` and ``job.state``
    events give as dicts). Build one with ``Job.from_dict(d)``; ``raw`` keeps the dict itself.

    Times (``created_at``, ``updated_at``, ``next_attempt_at``) are timezone-aware datetimes in UTC.
    Fields the daemon leaves out are None (``metadata``: an empty dict).
    """

    id: int
    state: str
    source: str
    destination: str
    protocol: str
    bytes_total: int = 0
    #: Bytes sent on the wire during this attempt.
    bytes_sent: int = 0
    #: Bytes the server committed; never goes backwards.
    bytes_acked: int = 0
    #: Bytes per second over the last few seconds.
    speed: float = 0.0
    #: Seconds left at the current speed, or None when unknown.
    eta: float | None = None
    attempts: int = 0
    #: Higher starts first; -1000 to 1000.
    priority: int = 0
    #: ``{"code", "message", "status"?}`` when it failed (``code``: network, timeout, http, ...).
    error: dict | None = None
    #: ``{"url"?, "status"?, "body"?}`` once completed.
    result: dict | None = None
    created_at: _dt.datetime | None = None
    updated_at: _dt.datetime | None = None
    next_attempt_at: _dt.datetime | None = None
    #: How the source was protected: "reflink", "copy", "none"...
    snapshot: str | None = None
    user: str | None = None
    #: ``[{"at", "message"}, ...]``: only in ``get``.
    history: list | None = None
    #: What a queued job waits for: "network", "metered", "battery", or None.
    waiting: str | None = None
    #: The ``image`` preparation spec asked for.
    image: str | None = None
    #: What preparation made: ``{"size", "original_size", "sha256", "file_name"?, ...}``.
    prepared: dict | None = None
    #: The batch's ID (its first job's ID), or None.
    batch: int | None = None
    #: Grows with every change of this job (and survives restarts): newer state wins.
    revision: int | None = None
    client_token: str | None = None
    metadata: dict = _field(default_factory=dict)
    raw: dict = _field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Job":
        """The view of a job dict; unknown keys are ignored (and kept in ``raw``)."""
        return cls(
            id=int(data["id"]), state=str(data["state"]), source=data.get("source", ""),
            destination=data.get("destination", ""), protocol=data.get("protocol", ""),
            bytes_total=data.get("bytes_total", 0) or 0, bytes_sent=data.get("bytes_sent", 0) or 0,
            bytes_acked=data.get("bytes_acked", 0) or 0, speed=float(data.get("speed", 0) or 0),
            eta=data.get("eta"), attempts=data.get("attempts", 0) or 0, priority=data.get("priority", 0) or 0,
            error=data.get("error"), result=data.get("result"),
            created_at=_parse_time(data.get("created_at")), updated_at=_parse_time(data.get("updated_at")),
            next_attempt_at=_parse_time(data.get("next_attempt_at")), snapshot=data.get("snapshot"),
            user=data.get("user"), history=data.get("history"), waiting=data.get("waiting"),
            image=data.get("image"), prepared=data.get("prepared"), batch=data.get("batch"),
            revision=data.get("revision"), client_token=data.get("client_token"),
            metadata=dict(data.get("metadata") or {}), raw=dict(data))

    @property
    def is_terminal(self) -> bool:
        """completed, failed or canceled: the job does nothing more by itself."""
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class Event:
    """One notification from an event subscription.

    ``kind`` is ``"job.state"`` (params: the whole job object), ``"job.progress"`` (params:
    ``{id, bytes_total, bytes_sent, bytes_acked, speed, eta, revision}``) or ``"job.removed"``
    (params: ``{id}``). ``from_snapshot`` is True for the synthetic ``job.state`` events made from
    a subscription's snapshot (see ``Client.events``).
    """

    kind: str
    params: dict
    from_snapshot: bool = False

    @property
    def id(self) -> int | None:
        """The job's ID."""
        value = self.params.get("id") if isinstance(self.params, dict) else None
        return int(value) if value is not None else None

    @property
    def revision(self) -> int | None:
        return self.params.get("revision") if isinstance(self.params, dict) else None

    @property
    def job(self) -> Job | None:
        """A ``job.state`` event's job as a ``Job``; None for the other kinds."""
        return Job.from_dict(self.params) if self.kind == "job.state" else None


# --------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------


class EventStream:
    """An ``events.subscribe`` subscription on a connection of its own; an iterator of ``Event``.

    Made by ``Client.events()``. Iterate it (``for event in stream``), or call ``next(timeout)`` to
    wait a bounded time. Close it (or use it as a context manager) to end the subscription.

    * ``snapshot``: with ``snapshot=True``, the list of the job dicts that matched when the
      subscription started (else None). The iterator also yields each of them first, as a
      ``job.state`` event with ``from_snapshot=True``, so a consumer can treat everything alike.
    * Stale updates are dropped: the highest ``revision`` seen per job is kept, and a ``job.state``
      at or below it, or a ``job.progress`` below it, is skipped (events can arrive before the
      snapshot they are older than). After a ``job.removed`` nothing more is yielded for that job.
    * ``events.overflow`` (the subscriber read too slowly) raises ``SubscriptionOverflow``; the
      daemon then closes the connection. Subscribe again with ``snapshot=True``.
    * The daemon closing the connection (it stops) raises ``ConnectionClosed``.
    """

    def __init__(self, path: str, ids: Sequence[int] | None = None, batch: int | None = None,
                 kinds: Sequence[str] | None = None, snapshot: bool = False, timeout: float | None = None,
                 states: Sequence[str] | None = None, job_fields: Sequence[str] | None = None):
        params: dict[str, Any] = {}
        if ids is not None:
            params["ids"] = [int(i) for i in ids]
        if batch is not None:
            params["batch"] = int(batch)
        if kinds is not None:
            params["kinds"] = _known_names(kinds, EVENT_KINDS, "event kinds")
        if states is not None:
            params["states"] = _known_names(states, JOB_STATES, "job states")
        if job_fields is not None:
            if isinstance(job_fields, str):
                raise TypeError("job_fields is a list of key names, such as ['error', 'revision']")
            params["job_fields"] = [str(name) for name in job_fields]
        if snapshot:
            params["snapshot"] = True
        self.params = params
        #: The highest revision seen per job ID.
        self.revisions: dict[int, int] = {}
        #: IDs of jobs seen removed.
        self.removed: set[int] = set()
        self.snapshot: list[dict] | None = None
        self._ready: _deque[Event] = _deque()
        self._connection = _Connection(path)
        try:
            self._subscribe(timeout)
        except BaseException:
            self._connection.close()
            raise

    def _subscribe(self, timeout: float | None) -> None:
        request_id = 1
        self._connection.send_line(
            _encode({"jsonrpc": "2.0", "id": request_id, "method": "events.subscribe", "params": self.params}))
        deadline = None if timeout is None else _time.monotonic() + timeout
        early: list[dict] = []
        while True:
            message = self._connection.read_message(deadline)
            if message is None:
                raise TimeoutError(f"uploadd did not answer events.subscribe within {timeout} s")
            if isinstance(message, dict) and "method" in message and "id" not in message:
                early.append(message)  # an event sent before the answer: ordered by revision below
                continue
            if isinstance(message, dict) and message.get("id") in (request_id, None):
                if "error" in message and message["error"] is not None:
                    raise UploaddError.from_object(message["error"])
                result = message.get("result")
                break
            raise ProtocolError(f"unexpected answer to events.subscribe: {message!r}")
        if self.params.get("snapshot"):
            if not isinstance(result, dict) or not isinstance(result.get("jobs"), list):
                raise ProtocolError(
                    f"events.subscribe with snapshot answered without 'jobs': {result!r} (is this uploadd too old?)")
            self.snapshot = result["jobs"]
            for job in sorted(self.snapshot, key=lambda j: j.get("id", 0)):
                self._accept(Event("job.state", job, from_snapshot=True))
        for message in early:
            self._take(message)

    def _take(self, message: Any) -> None:
        """Handles one notification: queues the event when it is news, raises on overflow."""
        if not isinstance(message, dict) or "method" not in message:
            return  # a stray answer: not ours to handle
        method = message["method"]
        params = message.get("params")
        if method == "events.overflow":
            self._connection.close()
            text = params.get("message", "") if isinstance(params, dict) else str(params)
            raise SubscriptionOverflow(text or "too many events unread")
        if not isinstance(params, dict):
            return
        self._accept(Event(method, params))

    def _accept(self, event: Event) -> None:
        job_id = event.id
        if job_id is None:
            self._ready.append(event)
            return
        if job_id in self.removed:
            return
        if event.kind == "job.removed":
            self.removed.add(job_id)
            self._ready.append(event)
            return
        revision = event.revision
        if revision is not None:
            known = self.revisions.get(job_id)
            if known is not None:
                if event.kind == "job.state" and revision <= known:
                    return
                if revision < known:
                    return
            self.revisions[job_id] = revision if known is None else max(known, revision)
        self._ready.append(event)

    def next(self, timeout: float | None = None) -> Event | None:
        """The next event; None if ``timeout`` seconds pass first (None: wait as long as it takes)."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        while not self._ready:
            message = self._connection.read_message(deadline)
            if message is None:
                return None
            self._take(message)
        return self._ready.popleft()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        event = self.next()
        assert event is not None
        return event

    def close(self) -> None:
        """Ends the subscription (closes its connection)."""
        self._connection.close()

    @property
    def closed(self) -> bool:
        return self._connection.closed

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


# --------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------


_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def join_destination(destination: str, folder: str) -> str:
    """``destination`` with the relative ``folder`` (``"trip/day1"``) below it, each name
    percent-encoded, ending in ``/``: where uploadctl puts the files of a sub-folder. ``destination``
    must end with ``/`` (or be ``REMOTE:``); an empty ``folder`` gives ``destination`` itself."""
    if not folder:
        return destination
    if not (destination.endswith("/") or destination.endswith(":")):
        raise ValueError(f"a folder's files go into a folder: end the destination with / ({destination}/)")
    parts = [p for p in folder.split("/") if p]
    encoded = ["".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in p.encode("utf-8")) for p in parts]
    return destination + "/".join(encoded) + "/"


def _current_umask() -> int:
    value = _os.umask(0o022)
    _os.umask(value)
    return value


def _known_names(names: Iterable[str], known: Sequence[str], what: str) -> list[str]:
    """``names`` as a list, each one of ``known``; else ValueError naming ``what`` and the known."""
    names = list(names)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown {what} {unknown}; they are {', '.join(known)}")
    return names


def _id_list(ids: int | Iterable[int]) -> list[int]:
    if isinstance(ids, (int, str)):
        return [int(ids)]
    return [int(i) for i in ids]


class Client:
    """A connection to uploadd's control socket, with a method per daemon method.

    ``Client(path=None, timeout=None, connect=True)``: ``path`` is the socket (default: as uploadctl
    finds it, see ``resolve_socket_path``); ``timeout`` (seconds) bounds each call's wait for its
    answer (None: no bound; a call that times out raises ``TimeoutError`` and the connection is
    closed, as its answer would come later). Connects at once unless ``connect=False``
    (then call ``connect()``). Use it as a context manager, or call ``close()``.

    A call after the daemon closed the connection while it was idle (a restart) connects again by
    itself; a connection lost while waiting for an answer raises ``ConnectionClosed`` (the request
    may or may not have been done: ``client_token`` makes adding again safe).

    One Client may be shared by threads (calls take turns). Event subscriptions (``events``,
    ``wait``) each open a connection of their own, so they never hold up calls.

    Every method returns the daemon's JSON: dicts, lists, strings and numbers. A job is a dict with
    the keys of ``Job`` (``Job.from_dict`` makes the typed view). JSON-RPC errors raise
    ``UploaddError`` with the daemon's ``code``.
    """

    def __init__(self, path: str | _os.PathLike | None = None, timeout: float | None = None,
                 connect: bool = True):
        self.path = resolve_socket_path(path)
        self.timeout = timeout
        self._connection: _Connection | None = None
        self._lock = _threading.RLock()
        self._ids = _itertools.count(1)
        self._notifications: _deque[dict] = _deque(maxlen=10000)
        if connect:
            self.connect()

    # -- connection ---------------------------------------------------------------------------

    def connect(self) -> "Client":
        """Connects (again, if it was closed). Raises ``UploaddNotRunning`` naming the path tried."""
        with self._lock:
            if self._connection is None or self._connection.closed:
                self._connection = _Connection(self.path)
        return self

    def close(self) -> None:
        """Closes the connection. Safe to call twice."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    @property
    def connected(self) -> bool:
        return self._connection is not None and not self._connection.closed

    def __enter__(self) -> "Client":
        return self.connect()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- raw calls ----------------------------------------------------------------------------

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Sends one request and returns its ``result``; raises ``UploaddError`` on an error answer.

        ``method`` is a name such as ``"job.get"``; ``params`` a dict (None or {}: none). The daemon
        rejects keys it does not know (code -32602), so a misspelt option is never ignored.
        """
        outcome = self._send([(method, params)], single=True)[0]
        if isinstance(outcome, UploaddError):
            raise outcome
        return outcome

    def batch(self, calls: Iterable[tuple[str, Mapping[str, Any] | None]]) -> list:
        """Sends several requests as JSON-RPC batches and returns each one's outcome, in order.

        ``calls`` is a list of ``(method, params)``. Each outcome is the ``result`` or, for a request
        the daemon refused, an ``UploaddError`` instance (returned, not raised: the others were done).
        The ``job.add`` calls of one batch are queued together, in the order given, with one journal
        write. Requests go out in lines of at most 1 MiB (the daemon's limit), one line at a time.
        """
        return self._send(list(calls), single=False)

    def _send(self, calls: list, single: bool) -> list:
        """Sends ``calls`` (as one plain request when ``single``) and returns their outcomes."""
        if not calls:
            return []
        with self._lock:
            if self._connection is None or self._connection.closed:
                self.connect()
            encoded: list[tuple[int, bytes]] = []
            for method, params in calls:
                request_id = next(self._ids)
                request: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
                if params:
                    request["params"] = dict(params)
                data = _encode(request)
                if len(data) >= MAX_LINE_LENGTH:
                    raise ValueError(f"a {method} request of {len(data)} bytes is over the daemon's 1 MiB limit")
                encoded.append((request_id, data))
            results: dict[int, Any] = {}
            line: list[bytes] = []
            line_ids: list[int] = []
            size = 2
            groups: list[tuple[list[int], bytes]] = []
            for request_id, data in encoded:
                if line and size + len(data) + 1 >= MAX_LINE_LENGTH:
                    groups.append((line_ids, b"[" + b",".join(line) + b"]"))
                    line, line_ids, size = [], [], 2
                line.append(data)
                line_ids.append(request_id)
                size += len(data) + 1
            if line:
                body = line[0] if single else b"[" + b",".join(line) + b"]"
                groups.append((line_ids, body))
            for ids, body in groups:
                self._exchange(ids, body, results)
            return [results[request_id] for request_id, _ in encoded]

    def _exchange(self, ids: list[int], body: bytes, results: dict[int, Any]) -> None:
        """Sends one line and reads until each of its requests is answered."""
        connection = self._connection
        assert connection is not None
        try:
            connection.send_line(body)
        except ConnectionClosed as error:
            # The daemon closed this connection while it was idle (it restarted): connect again
            # and send the line, which it never got.
            if not getattr(error, "unsent", False):
                raise
            connection = self._connection = _Connection(self.path)
            connection.send_line(body)
        waiting = set(ids)
        deadline = None if self.timeout is None else _time.monotonic() + self.timeout
        while waiting:
            message = connection.read_message(deadline)
            if message is None:
                connection.close()
                raise TimeoutError(f"uploadd did not answer within {self.timeout} s")
            replies = message if isinstance(message, list) else [message]
            for reply in replies:
                if not isinstance(reply, dict):
                    raise ProtocolError(f"unexpected message from uploadd: {reply!r}")
                if "method" in reply and "id" not in reply:
                    self._notifications.append(reply)  # only if someone subscribed on this connection
                    continue
                reply_id = reply.get("id")
                if reply_id is None:
                    # The daemon could not read the request at all (parse error, bad line).
                    if reply.get("error") is not None:
                        raise UploaddError.from_object(reply["error"])
                    raise ProtocolError(f"answer without an id: {reply!r}")
                if reply_id not in waiting:
                    continue
                waiting.discard(reply_id)
                if reply.get("error") is not None:
                    results[reply_id] = UploaddError.from_object(reply["error"])
                else:
                    results[reply_id] = reply.get("result")

    def take_notifications(self) -> list[dict]:
        """Notifications that arrived on this connection (only after a raw ``events.subscribe``
        through ``call``; ``events()`` is the better way), oldest first, as raw messages."""
        with self._lock:
            items = list(self._notifications)
            self._notifications.clear()
            return items

    # -- the daemon ---------------------------------------------------------------------------

    def hello(self) -> dict:
        """``daemon.hello``: who is serving. ``{name: "uploadd", version, protocol_version (int;
        changes within a major version are additive only), methods: [names], protocols: [names],
        capabilities: [strings] (optional features this daemon has, such as "revisions", "metadata",
        "client_token", "events.filters", "events.snapshot", "events.overflow", "events.states",
        "events.job_fields"),
        preparation_steps: [names] (such as "image"), pid}``."""
        return self.call("daemon.hello")

    def status(self) -> dict:
        """``daemon.status``: ``{version, pid, uptime (s), jobs: {state: count} (every state),
        speed (bytes/s, all uploads), max_transfers, state_directory, cache_directory, socket,
        journal_bytes, journal_damage (str|None), config_warnings: [str], config_errors?: [str],
        folder_problems?: [str] (watched folders not watched, and why),
        bandwidth_limit (bytes/s|None), conditions: {metered (bool|None), on_battery (bool|None),
        waiting: {"network"|"metered"|"battery": count}}}``; None: not known (no NetworkManager or
        UPower on the system bus); older daemons have no ``conditions``."""
        return self.call("daemon.status")

    def reload(self) -> dict:
        """``daemon.reload``: re-reads the config file. ``{warnings: [str]}``; a config with errors
        raises ``UploaddError`` with ``CODE_CONFIG_ERROR`` (the config in use stays)."""
        return self.call("daemon.reload")

    def limit(self, rate: int | str | None) -> dict:
        """``daemon.limit``: caps all uploads together. ``rate``: bytes per second (int), a size
        such as ``"5M"``, or None/``"off"`` for no limit. Holds across restarts.
        Returns ``{bandwidth_limit: bytes/s or None}``."""
        return self.call("daemon.limit", {"rate": rate})

    def remotes(self) -> list[dict]:
        """``daemon.remotes``: the remotes of the config, never their secrets. A list of
        ``{name, protocol, url (password redacted), user?, secret_source?}``."""
        return self.call("daemon.remotes")["remotes"]

    def test_remote(self, name: str) -> dict:
        """``remote.test``: checks that uploads to remote ``name`` can work (asks its server, or
        looks at its folder). ``{name, ok (bool), message, status? (HTTP status)}``. An unknown
        remote raises ``UploaddError`` (-32602)."""
        return self.call("remote.test", {"name": name})

    def folders(self) -> list[dict]:
        """``folder.list``: the watched folders of the config, in its order. A list of ``{name, path,
        to, state (watching, paused, waiting, failing, starting), reason?, taken, queued, uploaded,
        failed, last_upload ({id, source, at} or None)}``."""
        return self.call("folder.list")["folders"]

    def pause_folder(self, name: str) -> dict:
        """``folder.pause``: the folder takes nothing more, and its unfinished jobs are paused,
        across restarts until resumed. Returns the folder; an unknown one raises ``UploaddError``."""
        return self.call("folder.pause", {"name": name})

    def resume_folder(self, name: str) -> dict:
        """``folder.resume``: resumes the jobs the folder's pause paused, and takes what came
        meanwhile."""
        return self.call("folder.resume", {"name": name})

    # -- adding -------------------------------------------------------------------------------

    _ADD_OPTIONS = ("protocol", "headers", "fields", "user", "chunk_size", "priority", "snapshot", "image",
                    "client_token", "metadata", "umask", "batch", "new_batch", "source_identity")

    #: Whether ``job.add`` carries ``source_identity``: cleared when an older daemon refuses it.
    _sends_identity = True

    #: Whether ``add_many`` sends a chunk as one ``job.add`` of ``sources``: cleared when an older
    #: daemon refuses it.
    _sends_sources = True

    def _refuses_sources(self, error: UploaddError) -> bool:
        """Whether ``error`` is an older daemon refusing ``sources``; if so it is not sent again."""
        if (self._sends_sources and error.code == CODE_INVALID_PARAMS
                and "unknown key 'sources'" in error.message):
            self._sends_sources = False
            return True
        return False

    def _refuses_identity(self, error: Any) -> bool:
        """Whether ``error`` is an older daemon refusing ``source_identity``; if so it is not sent again."""
        if (self._sends_identity and isinstance(error, UploaddError) and error.code == CODE_INVALID_PARAMS
                and "unknown key 'source_identity'" in error.message):
            self._sends_identity = False
            return True
        return False

    def _add_params(self, source: str | _os.PathLike, destination: str, options: Mapping[str, Any]) -> dict:
        unknown = sorted(set(options) - set(self._ADD_OPTIONS))
        if unknown:
            raise TypeError(f"unknown add options {unknown}; they are {', '.join(self._ADD_OPTIONS)}")
        params: dict[str, Any] = {"source": _os.path.abspath(_os.fspath(source)), "destination": str(destination)}
        if "umask" not in options:
            params["umask"] = _current_umask()
        identity = options.get("source_identity")
        if identity is None:
            identity = source_identity(params["source"], follow_symlinks=True)
        elif isinstance(identity, _os.stat_result):
            identity = f"{identity.st_dev}:{identity.st_ino}"
        if identity and self._sends_identity:
            params["source_identity"] = identity
        for key, value in options.items():
            if value is None or (key == "new_batch" and value is False) or key == "source_identity":
                continue
            if key == "headers" and isinstance(value, Mapping):
                value = [f"{k}: {v}" for k, v in value.items()]
            elif key == "fields" and isinstance(value, Mapping):
                value = {str(k): str(v) for k, v in value.items()}
            elif key == "headers" or key == "fields":
                value = list(value)
            elif key == "metadata":
                value = {str(k): str(v) for k, v in value.items()}
            params[key] = value
        return params

    def add(self, source: str | _os.PathLike, destination: str, **options: Any) -> dict:
        """``job.add``: queues one file; returns the new job (a dict, state ``queued``).

        ``source``: the file (made absolute here; the daemon needs an absolute path). It is
        snapshotted at once (a reflink or a copy), so it may change or go away afterwards.

        ``destination``: ``file:///dir/`` (a local copy), ``http(s)://host/dir/`` or ``.../name``,
        ``s3://bucket/prefix/``, or ``REMOTE:path`` for a remote of the config. A trailing ``/``
        keeps the file's name.

        Options (all optional; None means "not given"):

        * ``protocol``: auto (default), put, post, tus, s3, chunked or file.
        * ``headers``: ``["K: V", ...]`` or a dict; ``fields``: ``["k=v", ...]`` or a dict (post).
        * ``user``: ``"USER"`` or ``"USER:PASSWORD"``; ``chunk_size``: bytes or ``"8M"``.
        * ``priority``: -1000 to 1000, higher first (default 0).
        * ``snapshot``: auto (default), copy, none; ``image``: an image preparation spec.
        * ``client_token``: a string of yours. Adding again with the same token returns the job
          already added instead of a second one, even after a daemon restart: generate the token
          before adding, store it, and after your own crash just add again. The add sent again must
          ask for the same upload (file, destination, options, metadata): one that differs is
          refused with -32602, naming the job that has the token.
        * ``metadata``: ``{str: str}`` kept with the job and returned in ``get``, ``list`` and
          events. At most 32 keys, keys 1-64 bytes, values up to 1024 bytes, 8 KiB in all, else
          ``UploaddError`` -32602.
        * ``umask``: what a ``file://`` copy's modes follow (0-511); default: this process's umask,
          as uploadctl does.
        * ``batch``: join the batch of that ID; ``new_batch=True``: start a batch whose ID is this
          job's. ``add_many`` does both for you.
        * ``source_identity``: the file you checked, as an ``os.stat_result`` (of ``os.lstat`` when
          you walked a folder and skipped symlinks) or ``"DEVICE:INODE"``. The daemon uploads the
          file at ``source`` only if it is still that file, so that a symlink to a private file
          renamed into its place by another user is refused, not uploaded. Default: what
          ``os.stat(source)`` finds now (symlinks followed, as you named the path).
        """
        params = self._add_params(source, destination, options)
        try:
            return self.call("job.add", params)
        except UploaddError as error:
            if not self._refuses_identity(error):
                raise
            params.pop("source_identity", None)
            return self.call("job.add", params)

    def add_many(self, paths: Iterable[str | _os.PathLike], destination: str | Callable[[str], str],
                 **options: Any) -> tuple[list[dict], list[dict]]:
        """Queues many files as one batch; returns ``(jobs, errors)``.

        ``destination`` is ``add``'s, the same for every file, or a callable ``f(path) -> str``
        (for instance to keep sub-folders: see ``join_destination``). ``paths`` may be any
        iterable (a generator walking a folder): files are sent as they come, 500 at a time.

        The first file that can be added starts the batch (``new_batch``); the others join it
        (``batch`` = that job's ID), 500 files a request (one ``job.add`` of ``sources``, or a
        JSON-RPC batch of one ``job.add`` per file for a daemon older than ``sources`` or when
        ``client_token`` or ``metadata`` differ per file), so the jobs keep the order given.
        ``jobs`` are the added job dicts (all with the same ``batch``), ``errors`` one
        ``{"source", "code", "message"}`` per file that could not be added (the others were).

        ``options`` are ``add``'s. ``batch=N`` adds every file to the existing batch N instead.
        ``client_token``, ``metadata`` and ``source_identity`` may be callables ``f(path) -> value``
        (one token per file: a single token for all would give back the first job each time; the
        identity your walk's ``lstat`` found for each file).
        """
        join = options.pop("batch", None)
        if options.pop("new_batch", None):
            pass  # add_many starts a batch anyway
        per_path = {k: options.pop(k) for k in ("client_token", "metadata", "source_identity")
                    if callable(options.get(k))}
        if "client_token" in options and options["client_token"] is not None:
            raise ValueError("add_many: give client_token as a callable f(path) -> token, one per file")
        jobs: list[dict] = []
        errors: list[dict] = []
        batch_id = int(join) if join is not None else None

        def params_for(path: Any) -> dict:
            extra = {k: f(path) for k, f in per_path.items()}
            target = destination(path) if callable(destination) else destination
            return self._add_params(path, target, {**options, **extra})

        pending: list[dict] = []
        # Only the identity may differ per file in one request of sources.
        shares_options = not (set(per_path) - {"source_identity"})

        def send(chunk: list[dict]) -> None:
            if shares_options and self._sends_sources and send_as_sources(chunk):
                return
            send_each(chunk)

        def send_as_sources(chunk: list[dict]) -> bool:
            """One ``job.add`` of ``sources``; False when the daemon is older than them."""
            nonlocal batch_id
            params = {k: v for k, v in chunk[0].items() if k not in ("source", "source_identity")}
            shared = params["destination"]
            sources: list[Any] = []
            for p in chunk:
                one = {k: p[k] for k in ("source", "source_identity") if p.get(k) is not None}
                if p["destination"] != shared:
                    one["destination"] = p["destination"]
                sources.append(one if len(one) > 1 else one["source"])
            for run in _runs_of_sources(sources, len(_encode(params))):
                try:
                    answer = self.call("job.add", dict(params, sources=run))
                except UploaddError as error:
                    if self._refuses_sources(error):
                        return False  # only the first request meets it: nothing was added
                    errors.extend({"source": s if isinstance(s, str) else s["source"], "code": error.code,
                                   "message": error.message} for s in run)
                    continue
                for failure in answer.get("errors", []):
                    errors.append({"source": failure["source"], "code": failure["code"],
                                   "message": failure["message"]})
                for job in answer["jobs"]:
                    if batch_id is None:
                        batch_id = job.get("batch") or job["id"]
                    jobs.append(job)
            return True

        def send_each(chunk: list[dict]) -> None:
            nonlocal batch_id
            outcomes = self.batch([("job.add", p) for p in chunk])
            if outcomes and self._refuses_identity(outcomes[0]):
                for p in chunk:
                    p.pop("source_identity", None)
                outcomes = self.batch([("job.add", p) for p in chunk])
            for params, outcome in zip(chunk, outcomes):
                if isinstance(outcome, UploaddError):
                    errors.append({"source": params["source"], "code": outcome.code, "message": outcome.message})
                else:
                    if batch_id is None:
                        batch_id = outcome.get("batch") or outcome["id"]
                    jobs.append(outcome)

        def flush() -> None:
            while pending:
                if batch_id is None:
                    first = pending.pop(0)
                    first["new_batch"] = True
                    send([first])
                else:
                    chunk = [dict(p, batch=batch_id) for p in pending[:ADD_BATCH_SIZE]]
                    del pending[:ADD_BATCH_SIZE]
                    send(chunk)

        for path in paths:
            pending.append(params_for(path))
            if len(pending) >= ADD_BATCH_SIZE:
                flush()
        flush()
        return jobs, errors

    # -- reading ------------------------------------------------------------------------------

    def get(self, id: int | Sequence[int]) -> Any:
        """``job.get``: one job (with its ``history``) by ID, as a dict; given a list of IDs, the
        list of them. An unknown ID raises ``UploaddError`` (``CODE_JOB_NOT_FOUND``)."""
        if isinstance(id, (int, str)):
            return self.call("job.get", {"id": int(id)})
        return self.call("job.get", {"ids": _id_list(id)})["jobs"]

    #: The most jobs one ``job.list`` page holds (the daemon's limit).
    LIST_PAGE = 10_000

    def list(self, states: Iterable[str] | None = None, ids: Iterable[int] | None = None,
             batch: int | None = None, job_fields: Iterable[str] | None = None) -> list[dict]:
        """``job.list``: the jobs, by ID (in the order of ``ids`` when given), as dicts; narrowed to
        ``states`` (names of ``JOB_STATES``), ``ids``, and/or one ``batch``; with ``job_fields``,
        only those members of each (``id`` and ``state`` always come; capability
        ``list.job_fields``).

        Fetched a page at a time (capability ``list.pages``), so that a queue of a million jobs
        never makes one answer of a hundred megabytes; from an older daemon, in one answer. Pages
        are not one snapshot: a job added meanwhile comes in a later page, one removed meanwhile
        may be missing."""
        params: dict[str, Any] = {}
        if states is not None:
            params["states"] = [states] if isinstance(states, str) else list(states)
        if batch is not None:
            params["batch"] = int(batch)
        if job_fields is not None:
            params["job_fields"] = [job_fields] if isinstance(job_fields, str) else list(job_fields)
        if ids is not None:
            params["ids"] = _id_list(ids)
            return self.call("job.list", params)["jobs"]
        jobs: list[dict] = []
        after = None
        while True:
            page, after = self.list_page(after=after, limit=self.LIST_PAGE, **params)
            jobs += page
            if after is None:
                return jobs

    def list_page(self, after: int | None = None, limit: int = LIST_PAGE,
                  **filters: Any) -> tuple[list[dict], int | None]:
        """One page of ``job.list``: at most ``limit`` jobs (the daemon caps it at 10,000) with IDs
        above ``after``, and the ``after`` of the next page (None on the last one). ``filters``
        are ``job.list``'s ``states``, ``batch`` and ``job_fields``. An older daemon, which has no
        pages, answers with every job at once and no next page."""
        params: dict[str, Any] = dict(filters, limit=int(limit))
        if after is not None:
            params["after"] = int(after)
        try:
            answer = self.call("job.list", params)
        except UploaddError as error:
            if after is not None or "unknown key 'limit'" not in error.message:
                raise
            del params["limit"]
            answer = self.call("job.list", params)
        next_after = answer.get("next")
        goes_back = after is not None and isinstance(next_after, int) and next_after <= after
        if next_after is not None and (not isinstance(next_after, int) or goes_back):
            raise ProtocolError(f"job.list answered with a next page after {next_after!r}")
        return answer["jobs"], next_after

    # -- acting on jobs -----------------------------------------------------------------------

    def _act(self, method: str, ids: Any, all: bool, states: Any, batch: Any) -> Any:
        params: dict[str, Any] = {}
        if ids is not None:
            if isinstance(ids, (int, str)):
                params["id"] = int(ids)
            else:
                params["ids"] = _id_list(ids)
        if all:
            params["all"] = True
        if states is not None:
            params["states"] = [states] if isinstance(states, str) else list(states)
        if batch is not None:
            params["batch"] = int(batch)
        if not params:
            raise ValueError(f"{method}: name the jobs (ids=...), or all=True, or batch=N")
        return self.call(method, params)

    def pause(self, ids: int | Sequence[int] | None = None, *, all: bool = False,
              states: Sequence[str] | None = None, batch: int | None = None) -> Any:
        """``job.pause``: stops jobs until resumed (a running upload stops at once).

        Selection, the same for ``resume``, ``retry``, ``cancel``, ``remove`` and ``delete``:

        * ``ids=N`` (one int): that job. Returns the job dict; an error raises ``UploaddError``
          (``CODE_JOB_NOT_FOUND``, ``CODE_INVALID_TRANSITION``...).
        * ``ids=[...]``, ``all=True`` or ``batch=N``: returns ``{"jobs": [acted on], "errors":
          [{"id", "code", "message"}]}`` (``errors`` absent when there are none). With ``all`` or
          ``batch``, only the jobs the command applies to are touched; ``states=[...]`` narrows
          ``all``/``batch`` further.
        """
        return self._act("job.pause", ids, all, states, batch)

    def resume(self, ids: int | Sequence[int] | None = None, *, all: bool = False,
               states: Sequence[str] | None = None, batch: int | None = None) -> Any:
        """``job.resume``: paused jobs go back to the queue (failed ones are retried too). See
        ``pause`` for the selection and the result."""
        return self._act("job.resume", ids, all, states, batch)

    def retry(self, ids: int | Sequence[int] | None = None, *, all: bool = False,
              states: Sequence[str] | None = None, batch: int | None = None) -> Any:
        """``job.retry``: failed jobs start again with a fresh attempt budget. See ``pause``."""
        return self._act("job.retry", ids, all, states, batch)

    def cancel(self, ids: int | Sequence[int] | None = None, *, all: bool = False,
               states: Sequence[str] | None = None, batch: int | None = None) -> Any:
        """``job.cancel``: stops jobs for good (state ``canceled``; they stay listed). See ``pause``."""
        return self._act("job.cancel", ids, all, states, batch)

    def remove(self, ids: int | Sequence[int] | None = None, *, all: bool = False,
               states: Sequence[str] | None = None, batch: int | None = None) -> Any:
        """``job.remove``: cancels if needed and forgets jobs (a ``job.removed`` event each).
        See ``pause``; ``remove(all=True, states=["completed"])`` forgets what is done."""
        return self._act("job.remove", ids, all, states, batch)

    def delete(self, ids: int | Sequence[int] | None = None, *, all: bool = False,
               states: Sequence[str] | None = None, batch: int | None = None) -> Any:
        """``job.delete``: deletes uploaded files from the server (or the folder) again, and removes
        the jobs. See ``pause`` (``ids`` or ``batch``, not both); the daemon refuses ``all`` and
        ``states`` (``CODE_INVALID_PARAMS``) rather than delete more than asked."""
        return self._act("job.delete", ids, all, states, batch)

    def priority(self, id: int, priority: int) -> dict:
        """``job.priority``: sets a job's priority (-1000 to 1000; higher starts first). Returns
        the job."""
        return self.call("job.priority", {"id": int(id), "priority": int(priority)})

    def move(self, id: int, *, top: bool = False, bottom: bool = False, before: int | None = None,
             after: int | None = None) -> dict:
        """``job.move``: puts a job at the ``top`` or ``bottom`` of the queue, or right ``before``
        or ``after`` another job (taking its priority). Give exactly one. Returns the job."""
        params: dict[str, Any] = {"id": int(id)}
        if top:
            params["top"] = True
        if bottom:
            params["bottom"] = True
        if before is not None:
            params["before"] = int(before)
        if after is not None:
            params["after"] = int(after)
        if len(params) != 2:
            raise ValueError("move: give exactly one of top=True, bottom=True, before=ID, after=ID")
        return self.call("job.move", params)

    def clear(self, job_fields: Iterable[str] | None = None) -> list[dict]:
        """``job.clear``: forgets every completed, failed and canceled job (as ``remove``). Returns the
        jobs removed; with ``job_fields``, only those members of each (``[]``: ``id`` and
        ``state``; capability ``clear.job_fields``)."""
        if job_fields is None:
            return self.call("job.clear")["jobs"]
        fields = [job_fields] if isinstance(job_fields, str) else list(job_fields)
        return self.call("job.clear", {"job_fields": fields})["jobs"]

    # -- events -------------------------------------------------------------------------------

    def events(self, ids: Iterable[int] | None = None, batch: int | None = None,
               kinds: Iterable[str] | None = None, snapshot: bool = False,
               states: Iterable[str] | None = None, job_fields: Iterable[str] | None = None) -> EventStream:
        """Subscribes to job events on a connection of its own; returns an ``EventStream``
        (an iterator of ``Event``; close it, or use ``with``, to stop).

        Filters (all optional; none: every job, every kind): ``ids`` (job IDs), ``batch`` (a batch
        ID), ``kinds`` (a subset of ``"job.state"``, ``"job.progress"``, ``"job.removed"``),
        ``states`` (``job.state`` only when a job enters one of these states; capability
        ``events.states``, an older daemon raises ``UploaddError`` with ``CODE_INVALID_PARAMS``).
        ``job_fields`` (only these keys of each job, in the snapshot and in ``job.state``, with
        ``id`` and ``state``; keep ``revision`` for the stale-update rule; capability
        ``events.job_fields``, an older daemon raises ``UploaddError`` with ``CODE_INVALID_PARAMS``).

        ``snapshot=True`` also fetches the current matching jobs, taken after the subscription
        started so that nothing in between is missed: they are in ``stream.snapshot`` and are
        yielded first, as ``job.state`` events with ``from_snapshot=True``. Stale updates are
        dropped by ``revision``.

        Kinds: ``job.state`` on every state change (params: the job); ``job.progress`` a few
        times a second per running job (``{id, bytes_total, bytes_sent, bytes_acked, speed, eta,
        revision}``); ``job.removed`` (``{id}``). A subscriber that reads too slowly gets
        ``SubscriptionOverflow``: subscribe again with ``snapshot=True``.
        """
        return EventStream(self.path, ids=None if ids is None else _id_list(ids), batch=batch,
                           kinds=kinds, snapshot=snapshot, timeout=self.timeout,
                           states=None if states is None else list(states),
                           job_fields=job_fields if job_fields is None or isinstance(job_fields, str)
                           else list(job_fields))

    def wait(self, ids: int | Iterable[int] | None = None, *, batch: int | None = None,
             timeout: float | None = None, missing_ok: bool = False) -> list[dict]:
        """Waits until the jobs have ended; returns their final job dicts (in ID order).

        Give ``ids`` (one ID or several) or ``batch``. A job has ended when it is completed,
        failed or canceled, or was removed (a removed job is left out of the result). With
        ``batch``, the jobs are those of the batch when waiting starts, plus any that join it
        while waiting. ``timeout`` in seconds (None: no limit) raises ``TimeoutError``.

        An ID the daemon does not know raises ``UploaddError`` (``CODE_JOB_NOT_FOUND``), unless
        ``missing_ok`` (then it counts as removed). Uses one subscription with a snapshot, no
        polling; if the subscription overflows it resubscribes by itself.
        """
        if (ids is None) == (batch is None):
            raise ValueError("wait: give ids or batch (one of them)")
        wanted = None if ids is None else _id_list(ids)
        deadline = None if timeout is None else _time.monotonic() + timeout
        while True:
            try:
                return self._wait_once(wanted, batch, deadline, timeout, missing_ok)
            except SubscriptionOverflow:
                # Again, with a snapshot; a job it lacks now was removed while we were cut off.
                missing_ok = True
                continue

    def _waiting_stream(self, wanted: list[int] | None, batch: int | None) -> EventStream:
        """A subscription that hears of ends, and of ``queued`` (a job retried after it ended goes
        on): each job's "running" costs the daemon and this client an event otherwise. An older
        daemon refuses ``states``: then every state."""
        kinds = ["job.state", "job.removed"]
        try:
            return self.events(ids=wanted, batch=batch, kinds=kinds, snapshot=True,
                               states=sorted(TERMINAL_STATES) + ["queued"])
        except UploaddError as error:
            if error.code != CODE_INVALID_PARAMS or "'states'" not in error.message:
                raise
            return self.events(ids=wanted, batch=batch, kinds=kinds, snapshot=True)

    def _wait_once(self, wanted: list[int] | None, batch: int | None, deadline: float | None,
                   timeout: float | None, missing_ok: bool) -> list[dict]:
        with self._waiting_stream(wanted, batch) as stream:
            latest: dict[int, dict] = {}
            removed: set[int] = set()
            snapshot_ids = {int(job["id"]) for job in stream.snapshot or []}
            if wanted is not None:
                missing = [i for i in wanted if i not in snapshot_ids]
                if missing and not missing_ok:
                    raise UploaddError(CODE_JOB_NOT_FOUND, f"no job {missing[0]}; list() shows the jobs")
                removed.update(missing)

            def unfinished() -> list[int]:
                known = wanted if wanted is not None else sorted(latest)
                return [i for i in known
                        if i not in removed and latest.get(i, {}).get("state") not in TERMINAL_STATES]

            while True:
                # Take in everything already received before deciding.
                event = stream.next(timeout=0) if stream._ready else None
                if event is None and not unfinished():
                    break
                if event is None:
                    remaining = None if deadline is None else deadline - _time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError(f"jobs {unfinished()} did not end within {timeout} s")
                    event = stream.next(timeout=remaining)
                    if event is None:
                        raise TimeoutError(f"jobs {unfinished()} did not end within {timeout} s")
                job_id = event.id
                if job_id is None:
                    continue
                if event.kind == "job.removed":
                    removed.add(job_id)
                    latest.pop(job_id, None)
                elif event.kind == "job.state":
                    latest[job_id] = event.params
            order = wanted if wanted is not None else sorted(latest)
            return [latest[i] for i in order if i in latest and i not in removed]
