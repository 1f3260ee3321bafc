#!/usr/bin/env python3
"""A fault-injecting TCP proxy for the integration tests: bad networks and bad servers on 127.0.0.1.

    python3 contrib/test/faultproxy.py --listen 127.0.0.1:0 --upstream 127.0.0.1:PORT --control 127.0.0.1:0

prints `listening on PORT control on PORT` once both sockets listen, then forwards every connection
to the upstream. Python 3.11 standard library only (asyncio); it only ever binds and dials 127.0.0.1.

A *plan* is a list of faults; each new connection takes the next one, and once the plan is used up
connections get the `default` fault (none: plain pass-through). The control port speaks a little
HTTP with JSON bodies:

    POST /plan   {"faults": [FAULT...], "default": FAULT|null}   replace the plan
    POST /down   {"seconds": S}     a server restart: reset every open connection, refuse new ones
                                    (the listening socket is closed) for S seconds, then listen again
    POST /reset                     forget the plan, the counters and the records
    GET  /stats                     counters and records (below)

FAULT is a JSON object with a `kind`:

    {"kind": "pass"}                               forward untouched
    {"kind": "reset_after", "bytes": N}            forward N bytes from the client, then reset (RST)
                                                   both sides
    {"kind": "stall", "seconds": S, "after": N}    forward N bytes from the client (default 0), then
                                                   close the upstream and go silent: keep reading and
                                                   dropping what the client sends, send it nothing;
                                                   close after S seconds unless the client gives up
    {"kind": "trickle", "rate": B, "direction": D} forward at B bytes/s; D is "up" (client to server,
                                                   the default), "down" or "both"
    {"kind": "respond", "status": 503, "retry_after": "2", "body": "..."}
                                                   read the request's headers and answer this status
                                                   (with Retry-After when given, Connection: close)
                                                   without asking the upstream; then read and drop the
                                                   request body until the client closes (at most 10 s)
    {"kind": "truncate", "bytes": N}               forward, but close both sides once N bytes of the
                                                   upstream's answers reached the client
    {"kind": "truncate", "response": K, "body_bytes": N}
                                                   the same, N bytes into the body of the K-th answer
                                                   (from 1; 1xx answers do not count)
    {"kind": "truncate", "response": K, "before_header": "NAME"}
                                                   the same, in the K-th answer's head, just before
                                                   its header NAME (the end of the head if it has none)
    {"kind": "drop"}                               close at once, reading nothing
    {"kind": "down", "after": N, "seconds": S}     forward N bytes from the client, then as POST /down

GET /stats answers
    {"now", "listen_port", "connections", "active", "bytes_up", "bytes_down", "plan_left", "refusing",
     "downs": [{"start", "end"}],
     "conns": [{"id", "fault", "opened", "closed", "up", "down", "first_up", "last_up", "fault_at",
                "closed_by"}],
     "requests": [{"t", "conn", "method", "path"}],       one per request seen from a client
     "responses": [{"t", "conn", "status", "injected"}]}  answers that reached a client
Times are Unix seconds (time.time()), so a test can compare them with its own clock. `up` counts every
byte a client sent (also the bytes a stall or a canned answer dropped), `down` every byte it got.
Requests are found by parsing HTTP/1.1 framing (Content-Length; a chunked body ends the parsing for
that connection), answers likewise.
"""

import argparse
import asyncio
import json
import signal
import socket
import struct
import sys
import time

HOST = "127.0.0.1"
READ_SIZE = 64 * 1024
DRAIN_LIMIT = 10.0
KINDS = {"pass", "reset_after", "stall", "trickle", "respond", "truncate", "drop", "down"}
REASONS = {400: "Bad Request", 408: "Request Timeout", 423: "Locked", 429: "Too Many Requests",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


class FaultError(Exception):
    pass


def check_fault(fault):
    if fault is None:
        return None
    if not isinstance(fault, dict) or fault.get("kind") not in KINDS:
        raise FaultError(f"a fault is an object with a kind out of {sorted(KINDS)}: {fault!r}")
    for key in ("bytes", "after", "seconds", "rate", "status"):
        if key in fault and not isinstance(fault[key], (int, float)):
            raise FaultError(f"{key} must be a number: {fault!r}")
    if fault["kind"] == "trickle" and fault.get("rate", 0) <= 0:
        raise FaultError("trickle needs a rate > 0")
    if fault["kind"] == "respond" and "status" not in fault:
        raise FaultError("respond needs a status")
    return fault


class HTTPStream:
    """Finds message boundaries in one direction of an HTTP/1.1 connection, incrementally, and where
    (as an offset in that direction's bytes) each message's body starts."""

    def __init__(self, on_message, is_response=False, methods=None):
        self.buffer = b""
        self.offset = 0  # of buffer[0] in the stream
        self.body_left = 0
        self.broken = False
        self.on_message = on_message
        self.is_response = is_response
        self.methods = methods  # requests' methods, in order, to know which answers have no body

    def feed(self, data):
        if self.broken:
            return
        if self.body_left and not self.buffer:  # the common case, a body streaming through: no copy
            used = min(self.body_left, len(data))
            self.body_left -= used
            self.offset += used
            data = data[used:]
        self.buffer += data
        while self.buffer and not self.broken:
            if self.body_left:
                used = min(self.body_left, len(self.buffer))
                self.body_left -= used
                self.offset += used
                self.buffer = self.buffer[used:]
                continue
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > 64 * 1024:
                    self.broken = True
                return
            head = self.buffer[:end].decode("latin-1")
            head_start = self.offset
            self.buffer = self.buffer[end + 4:]
            self.offset += end + 4
            lines = [line for line in head.split("\r\n")]
            while lines and not lines[0]:
                lines.pop(0)  # stray CRLF between messages
            if not lines:
                continue
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            first = lines[0].split(" ")
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self.broken = True
            length = int(headers["content-length"]) if headers.get("content-length", "").isdigit() else 0
            if self.is_response:
                status = int(first[1]) if len(first) > 1 and first[1].isdigit() else 0
                if 100 <= status < 200:
                    self.on_message({"status": status}, head_start, head, self.offset)
                    continue
                method = self.methods.pop(0) if self.methods else ""
                if method == "HEAD" or status in (204, 304):
                    length = 0
                self.on_message({"status": status}, head_start, head, self.offset)
            else:
                method = first[0]
                if self.methods is not None:
                    self.methods.append(method)
                self.on_message({"method": method, "path": first[1] if len(first) > 1 else ""}, head_start, head,
                                self.offset)
            self.body_left = length


class Proxy:
    def __init__(self, listen_port, upstream):
        self.listen_port = listen_port
        self.upstream = upstream
        self.server = None
        self.reset()

    def reset(self):
        self.plan = []
        self.default = None
        self.connections = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self.conns = []
        self.requests = []
        self.responses = []
        self.downs = []
        self.active = set()
        self.refusing = False

    # ---- listening, and restarts ----

    async def listen(self):
        # A small receive buffer (inherited by accepted sockets): the kernel acknowledges little
        # beyond what the proxy has read, so a trickle looks to the sender like a slow link
        # (its bytes drain slowly) rather than a fast one followed by silence.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.bind((HOST, self.listen_port))
        sock.listen(128)
        sock.setblocking(False)
        self.server = await asyncio.start_server(self.handle, sock=sock)
        self.listen_port = self.server.sockets[0].getsockname()[1]

    async def go_down(self, seconds):
        if self.refusing:
            return
        self.refusing = True
        record = {"start": time.time(), "end": None}
        self.downs.append(record)
        self.server.close()
        for conn in list(self.active):
            conn.kill("down")
        await self.server.wait_closed()

        async def back_up():
            await asyncio.sleep(seconds)
            for attempt in range(100):
                try:
                    await self.listen()
                    break
                except OSError:
                    await asyncio.sleep(0.05)
            else:
                print(f"faultproxy: cannot listen on port {self.listen_port} again", file=sys.stderr)
            record["end"] = time.time()
            self.refusing = False

        asyncio.get_running_loop().create_task(back_up())

    # ---- connections ----

    async def handle(self, reader, writer):
        if self.refusing:  # accepted just before the listener closed
            abort(writer)
            return
        fault = self.plan.pop(0) if self.plan else self.default
        self.connections += 1
        conn = Connection(self, self.connections, fault or {"kind": "pass"}, reader, writer)
        self.active.add(conn)
        try:
            await conn.run()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            conn.finish()
            self.active.discard(conn)

    def stats(self):
        return {"now": time.time(), "listen_port": self.listen_port, "connections": self.connections,
                "active": len(self.active), "bytes_up": self.bytes_up, "bytes_down": self.bytes_down,
                "plan_left": len(self.plan), "refusing": self.refusing, "downs": self.downs,
                "conns": self.conns, "requests": self.requests, "responses": self.responses}


def abort(writer):
    """Close with a TCP reset (SO_LINGER 0), as a crashed peer or a middlebox would."""
    try:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


class Connection:
    def __init__(self, proxy, number, fault, reader, writer):
        self.proxy = proxy
        self.fault = fault
        self.kind = fault["kind"]
        self.client_reader, self.client_writer = reader, writer
        self.upstream_writer = None
        self.tasks = []
        self.stalling = False
        self.seen_requests = 0
        self.answers_seen = 0
        self.cut_at = self.fault.get("bytes") if self.kind == "truncate" and "response" not in self.fault else None
        self.done = asyncio.Event()
        self.record = {"id": number, "fault": fault, "opened": time.time(), "closed": None, "up": 0, "down": 0,
                       "first_up": None, "last_up": None, "fault_at": None, "closed_by": None}
        proxy.conns.append(self.record)
        methods = []
        self.requests = HTTPStream(self.saw_request, methods=methods)
        self.answers = HTTPStream(self.saw_answer, is_response=True, methods=methods)

    def saw_request(self, message, head_start, head, body_start):
        self.seen_requests += 1
        self.proxy.requests.append({"t": time.time(), "conn": self.record["id"], **message})

    def saw_answer(self, message, head_start, head, body_start):
        self.proxy.responses.append({"t": time.time(), "conn": self.record["id"], "injected": False, **message})
        if message["status"] >= 200:
            self.answers_seen += 1
            if self.kind == "truncate" and self.fault.get("response") == self.answers_seen:
                name = self.fault.get("before_header")
                at = head.lower().find(f"\r\n{name.lower()}:") if name else -1
                if at >= 0:  # the status line and the headers before this one get through
                    self.cut_at = head_start + at + 2
                elif name:
                    self.cut_at = body_start  # no such header: the whole head, and not one byte more
                else:
                    self.cut_at = body_start + int(self.fault.get("body_bytes", 0))

    def closed_by(self, who):
        if self.record["closed_by"] is None:
            self.record["closed_by"] = who

    def kill(self, why):
        self.closed_by(why)
        abort(self.client_writer)
        if self.upstream_writer is not None:
            abort(self.upstream_writer)
        self.done.set()

    def finish(self):
        for task in self.tasks:
            task.cancel()
        if not self.client_writer.transport.is_closing():
            self.client_writer.close()
        if self.upstream_writer is not None and not self.upstream_writer.transport.is_closing():
            self.upstream_writer.close()
        if self.record["closed"] is None:
            self.record["closed"] = time.time()

    async def from_client(self, size=READ_SIZE):
        """The next piece the client sent, counted and parsed; b"" at its end."""
        data = await self.client_reader.read(size)
        now = time.time()
        if data:
            self.proxy.bytes_up += len(data)
            self.record["up"] += len(data)
            self.record["first_up"] = self.record["first_up"] or now
            self.record["last_up"] = now
            self.requests.feed(data)
        return data

    async def to_client(self, data, injected_status=None):
        self.client_writer.write(data)
        self.proxy.bytes_down += len(data)
        self.record["down"] += len(data)
        if injected_status is not None:
            self.proxy.responses.append({"t": time.time(), "conn": self.record["id"], "status": injected_status,
                                         "injected": True})
        await self.client_writer.drain()

    async def run(self):
        kind = self.kind
        if kind == "drop":
            self.closed_by("proxy")
            self.record["fault_at"] = time.time()
            return
        if kind == "stall" and not self.fault.get("after", 0):
            await self.stall()
            return
        if kind == "respond":
            await self.respond()
            return
        try:
            up_reader, self.upstream_writer = await asyncio.open_connection(*self.proxy.upstream)
        except OSError:
            self.closed_by("upstream unreachable")
            abort(self.client_writer)
            return
        up = asyncio.create_task(self.pump_up())
        down = asyncio.create_task(self.pump_down(up_reader))
        stop = asyncio.create_task(self.done.wait())
        self.tasks = [up, down, stop]
        await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
        if up.done() and not down.done() and not self.done.is_set():
            if up.exception() is None:
                # The client finished sending (half-close): let the answer come back.
                await asyncio.wait([down, stop], return_when=asyncio.FIRST_COMPLETED, timeout=DRAIN_LIMIT)
            else:
                self.closed_by("client")  # reset by the client
        for task in (up, down):
            if task.done() and not task.cancelled() and task.exception() is not None:
                if not isinstance(task.exception(), (ConnectionError, OSError)):
                    raise task.exception()

    async def pump_up(self):
        fault = self.fault
        threshold = fault.get("bytes") if self.kind == "reset_after" else fault.get("after")
        if self.kind not in ("reset_after", "stall", "down"):
            threshold = None
        trickle = fault.get("rate") if self.kind == "trickle" and fault.get("direction", "up") in ("up", "both") else None
        forwarded = 0
        while True:
            data = await self.from_client(max(1, min(READ_SIZE, int(trickle) // 20)) if trickle else READ_SIZE)
            if not data:
                self.closed_by("client")
                if self.upstream_writer.can_write_eof():
                    self.upstream_writer.write_eof()
                return
            if threshold is not None and forwarded + len(data) >= threshold:
                keep = max(0, int(threshold) - forwarded)
                if keep:
                    self.upstream_writer.write(data[:keep])
                    await self.upstream_writer.drain()
                forwarded += keep
                self.record["fault_at"] = time.time()
                if self.kind == "reset_after":
                    self.kill("proxy")
                elif self.kind == "down":
                    await self.proxy.go_down(fault.get("seconds", 2))
                else:
                    self.stalling = True
                    abort(self.upstream_writer)
                    await self.stall()
                    self.done.set()
                return
            self.upstream_writer.write(data)
            await self.upstream_writer.drain()
            forwarded += len(data)
            if trickle:
                await asyncio.sleep(len(data) / trickle)

    async def pump_down(self, up_reader):
        fault = self.fault
        trickle = fault.get("rate") if self.kind == "trickle" and fault.get("direction", "up") in ("down", "both") else None
        sent = 0
        while True:
            size = max(1, min(READ_SIZE, int(trickle) // 20)) if trickle else READ_SIZE
            try:
                data = await up_reader.read(size)
            except (ConnectionError, OSError):
                data = b""
            if self.stalling:
                await self.done.wait()  # a stall sends the client nothing, not even the end
                return
            if not data:
                self.closed_by("upstream")
                self.client_writer.close()
                self.done.set()
                return
            self.answers.feed(data)  # before sending: it finds where a truncate fault cuts
            if self.cut_at is not None and sent + len(data) >= self.cut_at:
                await self.to_client(data[:max(0, int(self.cut_at) - sent)])
                self.record["fault_at"] = time.time()
                self.closed_by("proxy")
                self.client_writer.close()
                abort(self.upstream_writer)
                self.done.set()
                return
            await self.to_client(data)
            sent += len(data)
            if trickle:
                await asyncio.sleep(len(data) / trickle)

    async def stall(self):
        """Read and drop whatever the client sends, send nothing, for the fault's seconds."""
        self.record["fault_at"] = self.record["fault_at"] or time.time()
        deadline = time.monotonic() + self.fault.get("seconds", 3600)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.closed_by("proxy")
                return
            try:
                data = await asyncio.wait_for(self.from_client(), left)
            except asyncio.TimeoutError:
                self.closed_by("proxy")
                return
            except (ConnectionError, OSError):
                self.closed_by("client")
                return
            if not data:
                self.closed_by("client")
                return

    async def respond(self):
        while not self.seen_requests:
            data = await self.from_client()
            if not data:
                self.closed_by("client")
                return
        status = int(self.fault["status"])
        body = self.fault.get("body", f"faultproxy: injected {status}\n").encode()
        head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}", "Content-Type: text/plain",
                f"Content-Length: {len(body)}", "Connection: close"]
        if self.fault.get("retry_after") is not None:
            head.append(f"Retry-After: {self.fault['retry_after']}")
        self.record["fault_at"] = time.time()
        await self.to_client(("\r\n".join(head) + "\r\n\r\n").encode() + body, injected_status=status)
        # Take the rest of the request, as a server would, so the client reads the answer rather than
        # a reset; the client closes once it has the answer.
        deadline = time.monotonic() + DRAIN_LIMIT
        while (left := deadline - time.monotonic()) > 0:
            try:
                data = await asyncio.wait_for(self.from_client(), left)
            except (asyncio.TimeoutError, ConnectionError, OSError):
                break
            if not data:
                break
        self.closed_by("client" if time.monotonic() < deadline else "proxy")


# ---- the control port ----

async def control(proxy, reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = await reader.readexactly(length) if length else b""
        status, answer = 200, {"ok": True}
        try:
            params = json.loads(body) if body.strip() else {}
            if (method, path) == ("GET", "/stats"):
                answer = proxy.stats()
            elif (method, path) == ("POST", "/plan"):
                faults = [check_fault(f) for f in params.get("faults", [])]
                proxy.default = check_fault(params.get("default"))
                proxy.plan = faults
            elif (method, path) == ("POST", "/down"):
                await proxy.go_down(float(params.get("seconds", 2)))
            elif (method, path) == ("POST", "/reset"):
                proxy.reset()
            else:
                status, answer = 404, {"error": f"no {method} {path}"}
        except (FaultError, ValueError, TypeError, AttributeError) as error:
            status, answer = 400, {"error": str(error)}
        data = json.dumps(answer).encode()
        writer.write(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
        await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


def address(text):
    host, _, port = text.rpartition(":")
    if host != HOST:
        raise argparse.ArgumentTypeError(f"only {HOST} is allowed: {text}")
    return host, int(port)


async def main_async(args):
    proxy = Proxy(args.listen[1], args.upstream)
    await proxy.listen()
    control_server = await asyncio.start_server(lambda r, w: control(proxy, r, w), *args.control)
    control_port = control_server.sockets[0].getsockname()[1]
    print(f"listening on {proxy.listen_port} control on {control_port}", flush=True)
    async with control_server:
        await control_server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=address, required=True, help="127.0.0.1:PORT (0: any free port)")
    parser.add_argument("--upstream", type=address, required=True, help="127.0.0.1:PORT of the real server")
    parser.add_argument("--control", type=address, required=True, help="127.0.0.1:PORT (0: any free port)")
    args = parser.parse_args()
    # Whoever started us may have left SIGTERM blocked or ignored: make it end the proxy at once.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        asyncio.run(main_async(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
