#!/usr/bin/env python3
"""Start and stop the real servers the integration tests upload to.

    python3 contrib/test/servers.py start [--dir DIR] [--only NAME]...   # stop leftovers, start all (or
                                                        # the named ones), write DIR/servers.env
    python3 contrib/test/servers.py stop  [--dir DIR]   # SIGTERM, then SIGKILL after 5 s (SeaweedFS: at
                                                        # once); exits 0 if none ran
    python3 contrib/test/servers.py env   [--dir DIR]   # print DIR/servers.env

DIR defaults to <repo>/.build/test-servers. Every server listens on 127.0.0.1 only, on a free port,
runs in its own process group (its pid and start time in DIR/pids/NAME.pid) and logs to
DIR/logs/NAME.log. `start` wipes the data the previous run left (DIR/nginx, DIR/nginx-tls, DIR/receiver,
DIR/tus, DIR/seaweed, DIR/dav2, DIR/logs) so a test never passes on a stale file. The TLS nginx gets a
fresh private CA (openssl) on every start: DIR/nginx-tls/ca.pem, exported as UPLOADD_TEST_TLS_CA. The
reference receiver gets a fresh random token (DIR/receiver/token), exported as UPLOADD_TEST_RECEIVER_TOKEN.

The second WebDAV server, which is not nginx, is WsgiDAV under cheroot (contrib/test/dav2_app.py),
with RFC 4918 rules: 409 for a PUT into a missing folder, MKCOL one folder at a time. Both its shares
take Basic auth (UPLOADD_TEST_DAV2_USER, UPLOADD_TEST_DAV2_PASSWORD): UPLOADD_TEST_DAV2_URL, a normal
writable share whose files are UPLOADD_TEST_DAV2_ROOT, and UPLOADD_TEST_DAV2_NOMKCOL_URL (files in
UPLOADD_TEST_DAV2_NOMKCOL_ROOT), which answers MKCOL with 403 but takes PUTs into folders that
exist (make them on disk).

The Python servers (tus, S3, the second WebDAV server) run from the virtual environment
<repo>/.build/venv, which `start` makes with `python3 -m venv` (Debian: python3-venv) and fills from
contrib/test/requirements.txt; a stamp file in it skips pip while that file is unchanged.

Adding a server is one function in SERVERS: take the directory, `spawn` the process, `wait_for` it to
answer, and return its servers.env entries.
"""

import argparse
import base64
import datetime
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
START_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0
AUTH_USER, AUTH_PASSWORD = "uploader", "s3cret-pass"
DAV2_USER, DAV2_PASSWORD = "dav2-uploader", "dav2-s3cret"
DAV_EXT_MODULE = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"
VENV = REPO / ".build" / "venv"
REQUIREMENTS = REPO / "contrib" / "test" / "requirements.txt"
S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION = "uploadd-test", "uploadd-test", "uploadd-test-secret", "us-east-1"
# Killed with SIGKILL straight away: SeaweedFS takes over 10 s to stop on SIGTERM, and start wipes its data.
KILL_AT_ONCE = {"seaweed"}


class ServerError(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def distinct_free_ports(count: int) -> list[int]:
    """count free ports, distinct: every socket stays bound until all are chosen."""
    held = [socket.socket() for _ in range(count)]
    try:
        for s in held:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def free_ports(count: int, offset: int) -> list[int]:
    """count distinct free ports P whose P + offset is free too; every socket stays bound until all are chosen."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for _ in range(100 * count):
            if len(ports) == count:
                break
            base = socket.socket()
            held.append(base)
            base.bind((HOST, 0))
            port = base.getsockname()[1]
            if port + offset > 65535:
                continue
            pair = socket.socket()
            held.append(pair)
            try:
                pair.bind((HOST, port + offset))
            except OSError:
                continue
            ports.append(port)
        if len(ports) < count:
            raise ServerError(f"found no {count} free ports P with P + {offset} free too")
        return ports
    finally:
        for s in held:
            s.close()


def http_request(port: int, method: str, path: str, headers: dict[str, str] | None = None):
    """One request to 127.0.0.1:port (never through a proxy); (status, headers), or None if it failed."""
    conn = http.client.HTTPConnection(HOST, port, timeout=2)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        response.read()
        return response.status, response.headers
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def ensure_venv() -> Path:
    """Make <repo>/.build/venv and pip-install the pinned requirements, unless its stamp says done."""
    python = VENV / "bin" / "python"
    base = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    requirements = REQUIREMENTS.read_bytes()
    stamp_file = VENV / ".uploadd-requirements.sha256"
    stamp = hashlib.sha256(requirements + b"\0" + base.encode()).hexdigest() + "\n"
    if python.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        return VENV
    if not python.exists():  # none yet, half made, or its base python is gone
        print(f"servers.py: creating {VENV} with {base}", file=sys.stderr)
        made = subprocess.run([base, "-m", "venv", "--clear", str(VENV)], capture_output=True, text=True)
        if made.returncode != 0:
            shutil.rmtree(VENV, ignore_errors=True)
            raise ServerError(f"`{base} -m venv {VENV}` failed (on Debian, install python3-venv: "
                              f"contrib/scripts/install-deps --test):\n{(made.stdout + made.stderr).strip()}")
    stamp_file.unlink(missing_ok=True)
    print(f"servers.py: installing {REQUIREMENTS.relative_to(REPO)} into {VENV}", file=sys.stderr)
    pip = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                          "--quiet", "-r", str(REQUIREMENTS)], capture_output=True, text=True,
                         env={**os.environ, "PIP_REQUIRE_VIRTUALENV": "1"})
    if pip.returncode != 0:
        output = (pip.stdout + pip.stderr).strip()
        names = [line.split("==")[0].strip() for line in requirements.decode().splitlines()
                 if line.strip() and not line.startswith("#")]
        errors = "\n".join(line for line in output.splitlines() if "ERROR" in line or "error" in line)
        failed = [n for n in names if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w.-])", errors, re.I)]
        which = ", ".join(failed) if failed else "one of " + ", ".join(names)
        tail = "\n".join(output.splitlines()[-15:])
        raise ServerError(f"pip could not install {which} into {VENV} (from {REQUIREMENTS}):\n{tail}")
    stamp_file.write_text(stamp)
    return VENV


def answers(port: int) -> bool:
    try:
        socket.create_connection((HOST, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: tells our process apart from a later one that reuses its pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def log_tail(d: Path, name: str, lines: int = 25) -> str:
    try:
        text = (d / "logs" / f"{name}.log").read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def spawn(d: Path, name: str, argv: list[str], env: dict[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.Popen:
    """Start argv detached: own session and process group, stdin from /dev/null, output to its log."""
    with open(d / "logs" / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    (d / "pids" / f"{name}.pid").write_text(f"{proc.pid} {start_time(proc.pid)}\n")
    return proc


def wait_for(d: Path, name: str, proc: subprocess.Popen, probe):
    """Poll probe() until it returns something truthy; fail if the process exits or time runs out."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if (result := probe()):
            return result
        if (status := proc.poll()) is not None:
            raise ServerError(f"{name} exited with status {status} while starting; "
                             f"end of {d}/logs/{name}.log:\n{log_tail(d, name)}")
        time.sleep(0.05)
    raise ServerError(f"{name} did not answer within {START_TIMEOUT:.0f} s; "
                     f"end of {d}/logs/{name}.log:\n{log_tail(d, name)}")


# The part both nginx configs share: nothing here touches /etc/nginx, /var/log/nginx or /run. The
# server blocks follow; the caller closes the http block.
NGINX_HEAD = """\
# Generated by contrib/test/servers.py: {what}
load_module {dav_ext};
{user}
daemon off;
worker_processes 1;
pid "{n}/nginx.pid";
lock_file "{n}/nginx.lock";
error_log stderr warn;
events {{ worker_connections 256; }}
http {{
    default_type application/octet-stream;
    access_log "{d}/logs/{name}-access.log";
    client_body_temp_path "{n}/temp/body";
    proxy_temp_path "{n}/temp/proxy";
    fastcgi_temp_path "{n}/temp/fastcgi";
    uwsgi_temp_path "{n}/temp/uwsgi";
    scgi_temp_path "{n}/temp/scgi";
    client_max_body_size 0;
    client_body_buffer_size 1m;
"""

NGINX_SERVERS = """\
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 10000;
    server {{
        listen {host}:{port};
        root "{n}/www";
        location /dav/ {{
            dav_methods PUT DELETE MKCOL COPY MOVE;
            dav_ext_methods PROPFIND OPTIONS;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }}
        location /private/ {{
            auth_basic "uploadd tests";
            auth_basic_user_file "{n}/htpasswd";
            dav_methods PUT DELETE MKCOL COPY MOVE;
            dav_ext_methods PROPFIND OPTIONS;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }}
    }}
}}
"""


def run_nginx(d: Path, name: str, what: str, servers: str, **values) -> subprocess.Popen:
    """Writes d/NAME/nginx.conf (the shared head, then `servers`) and starts nginx with it."""
    n = d / name
    # A root master hands requests to a worker running as `user` (default nobody), which could not
    # write DIR or even reach it under /root. As root, run the worker as root too; as anyone else
    # nginx cannot switch users, and the worker is simply us.
    user = "user root root;" if os.geteuid() == 0 else ""
    conf = n / "nginx.conf"
    conf.write_text((NGINX_HEAD + servers).format(
        what=what, name=name, dav_ext=DAV_EXT_MODULE, user=user, n=n, d=d, host=HOST, **values))
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    return spawn(d, name, [nginx, "-e", "stderr", "-p", f"{n}/", "-c", str(conf)])


def start_nginx(d: Path) -> dict[str, str]:
    n = d / "nginx"
    for sub in ("www/dav", "www/private", "temp"):
        (n / sub).mkdir(parents=True, exist_ok=True)
    # {SSHA} is salted SHA-1, which nginx checks itself: no crypt(3) or openssl needed to make it.
    salt = os.urandom(8)
    digest = base64.b64encode(hashlib.sha1(AUTH_PASSWORD.encode() + salt).digest() + salt).decode()
    (n / "htpasswd").write_text(f"{AUTH_USER}:{{SSHA}}{digest}\n")
    port = free_port()
    proc = run_nginx(d, "nginx", "WebDAV PUT, and basic auth under /private/.", NGINX_SERVERS, port=port)
    wait_for(d, "nginx", proc, lambda: answers(port))
    return {"UPLOADD_TEST_NGINX_URL": f"http://{HOST}:{port}", "UPLOADD_TEST_NGINX_ROOT": str(n / "www"),
            "UPLOADD_TEST_AUTH_USER": AUTH_USER, "UPLOADD_TEST_AUTH_PASSWORD": AUTH_PASSWORD}


NGINX_TLS_SERVERS = """\
    ssl_protocols TLSv1.2 TLSv1.3;
    server {{
        listen {host}:{port} ssl;
        # The same files on a port that offers HTTP/2 too (ALPN h2).
        listen {host}:{h2_port} ssl http2;
        ssl_certificate "{n}/server.pem";
        ssl_certificate_key "{n}/server.key";
        root "{n}/www";
        location /dav/ {{
            dav_methods PUT DELETE MKCOL COPY MOVE;
            dav_ext_methods PROPFIND OPTIONS;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }}
    }}
    # An HTTP/2 reverse proxy that streams request bodies to the plain DAV server below, as upload
    # apps ask of nginx (tusd, Nextcloud: proxy_request_buffering off): an HTTP/2 upload through it
    # gets nginx's 64 KiB stream window per round trip (the bench measures it, scenario 15).
    server {{
        listen {host}:{h2_proxy_port} ssl http2;
        ssl_certificate "{n}/server.pem";
        ssl_certificate_key "{n}/server.key";
        client_body_buffer_size 16k;  # nginx's default (the head raises it for the DAV servers)
        location / {{
            proxy_pass http://{host}:{upstream_port};
            proxy_request_buffering off;
            proxy_http_version 1.1;
        }}
    }}
    server {{
        listen {host}:{upstream_port};
        root "{n}/www";
        location /dav/ {{
            dav_methods PUT DELETE MKCOL;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }}
    }}
    # Signed by the same CA, but for another name (127.0.0.2): a client must refuse it.
    server {{
        listen {host}:{wrong_port} ssl;
        ssl_certificate "{n}/wrong-name.pem";
        ssl_certificate_key "{n}/wrong-name.key";
        root "{n}/www";
        location /dav/ {{
            dav_methods PUT DELETE;
            create_full_put_path on;
        }}
    }}
}}
"""


def openssl(n: Path, *args: str) -> None:
    done = subprocess.run(["openssl", *args], cwd=n, capture_output=True, text=True)
    if done.returncode != 0:
        raise ServerError(f"openssl {' '.join(args)} failed (on Debian, install openssl):\n{done.stderr.strip()}")


def make_test_ca(n: Path) -> None:
    """A private CA (ca.pem) and two certificates it signs: server.pem for 127.0.0.1 and
    wrong-name.pem for 127.0.0.2 only. EC P-256 keys, valid for 2 days; made fresh on every start."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl(n, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=uploadd test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, san in (("server", f"IP:{HOST}"), ("wrong-name", "IP:127.0.0.2,DNS:wrong-name.invalid")):
        (n / f"{name}.ext").write_text(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n"
                                       "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
        openssl(n, "req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={san.split(',')[0][3:]}")
        openssl(n, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext")


def start_nginx_tls(d: Path) -> dict[str, str]:
    n = d / "nginx-tls"
    for sub in ("www/dav", "temp"):
        (n / sub).mkdir(parents=True, exist_ok=True)
    make_test_ca(n)
    port, h2_port, h2_proxy_port, upstream_port, wrong_port = distinct_free_ports(5)
    proc = run_nginx(d, "nginx-tls", "WebDAV PUT over TLS (HTTP/1.1; HTTP/2 on a port of its own; an HTTP/2 "
                     "reverse proxy) with certificates from a private test CA.", NGINX_TLS_SERVERS, port=port,
                     h2_port=h2_port, h2_proxy_port=h2_proxy_port, upstream_port=upstream_port,
                     wrong_port=wrong_port)
    wait_for(d, "nginx-tls", proc,
             lambda: all(answers(p) for p in (port, h2_port, h2_proxy_port, upstream_port, wrong_port)))
    return {"UPLOADD_TEST_TLS_URL": f"https://{HOST}:{port}", "UPLOADD_TEST_TLS_H2_URL": f"https://{HOST}:{h2_port}",
            "UPLOADD_TEST_TLS_H2_PROXY_URL": f"https://{HOST}:{h2_proxy_port}",
            "UPLOADD_TEST_TLS_ROOT": str(n / "www"), "UPLOADD_TEST_TLS_CA": str(n / "ca.pem"),
            "UPLOADD_TEST_TLS_ACCESS_LOG": str(d / "logs" / "nginx-tls-access.log"),
            "UPLOADD_TEST_TLS_WRONG_NAME_URL": f"https://{HOST}:{wrong_port}"}


def start_receiver(d: Path) -> dict[str, str]:
    """The reference receiver, with a fresh random token that every request must carry (in a 0600
    file, not on its command line where ps would show it)."""
    files = d / "receiver" / "files"
    files.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    token_file = d / "receiver" / "token"
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    script = REPO / "contrib" / "receiver" / "receiver.py"
    proc = spawn(d, "receiver", [sys.executable, str(script), "--host", HOST, "--port", "0", "--dir", str(files),
                                 "--token-file", str(token_file)])
    listening = re.compile(r"listening on http://[^\s:]+:(\d+)")
    match = wait_for(d, "receiver", proc, lambda: listening.search((d / "logs" / "receiver.log").read_text()))
    port = int(match[1])
    for headers, want in (({}, 401), ({"Authorization": f"Bearer {token}"}, 200)):
        if (answer := http_request(port, "GET", "/stats", headers)) is None or answer[0] != want:
            raise ServerError(f"the receiver answered GET /stats {'with' if headers else 'without'} its token with "
                              f"{answer and answer[0]}, not {want} (see {d}/logs/receiver.log)")
    return {"UPLOADD_TEST_RECEIVER_URL": f"http://{HOST}:{port}", "UPLOADD_TEST_RECEIVER_DIR": str(files),
            "UPLOADD_TEST_RECEIVER_TOKEN": token}


def start_tus(d: Path) -> dict[str, str]:
    files = d / "tus" / "files"
    files.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = spawn(d, "tus", [str(VENV / "bin" / "python"), "-m", "uvicorn", "--app-dir", str(REPO / "contrib" / "test"),
                            "--host", HOST, "--port", str(port), "tus_app:app"],
                 env={"UPLOADD_TEST_TUS_DIR": str(files)})

    def ready():
        answer = http_request(port, "OPTIONS", "/files/", {"Tus-Resumable": "1.0.0"})
        return answer is not None and answer[1].get("Tus-Version")
    wait_for(d, "tus", proc, ready)
    return {"UPLOADD_TEST_TUS_URL": f"http://{HOST}:{port}/files/", "UPLOADD_TEST_TUS_DIR": str(files)}


def s3_status(port: int, method: str, path: str, secret: str | None = S3_SECRET_KEY) -> int | None:
    """Status of a bodiless request to the S3 gateway, SigV4-signed with `secret` (None: unsigned)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    day, stamp = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": f"{HOST}:{port}", "x-amz-content-sha256": payload, "x-amz-date": stamp}
    if secret is not None:
        signed = ";".join(sorted(headers))
        canonical = "\n".join([method, path, "", *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed, payload])
        scope = f"{day}/{S3_REGION}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = ("AWS4" + secret).encode()
        for part in (day, S3_REGION, "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={S3_ACCESS_KEY}/{scope}, "
                                    f"SignedHeaders={signed}, Signature={signature}")
    answer = http_request(port, method, path, headers)
    return answer and answer[0]


def start_seaweed(d: Path) -> dict[str, str]:
    data = d / "seaweed"
    (data / "data").mkdir(parents=True, exist_ok=True)
    config = data / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": S3_ACCESS_KEY,
        "credentials": [{"accessKey": S3_ACCESS_KEY, "secretKey": S3_SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, indent=2) + "\n")
    # Every listener on 127.0.0.1 and a port of ours. Each gRPC port is its HTTP port + 10000, as weed
    # assumes: its maintenance worker dials the admin server there whatever -admin.port.grpc says.
    # No WebDAV, Iceberg or Lance; the admin server (its UI off) cannot be turned off, so it gets ports
    # too; no telemetry. -bucket creates the bucket once S3 is up.
    ports = {}
    for server, port in zip(("master", "volume", "filer", "s3", "admin"), free_ports(5, 10000)):
        ports[f"{server}.port"], ports[f"{server}.port.grpc"] = port, port + 10000
    # weed makes unix sockets /tmp/seaweedfs-*-PORT.sock that it leaves behind; stop() removes them.
    (d / "pids" / "seaweed.ports").write_text(" ".join(map(str, ports.values())) + "\n")
    argv = [str(VENV / "bin" / "weed"), "mini", f"-dir={data / 'data'}", f"-ip={HOST}", f"-ip.bind={HOST}",
            *(f"-{flag}={port}" for flag, port in ports.items()),
            "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0", "-admin.ui=false",
            "-master.telemetry=false", f"-s3.config={config}", f"-bucket={S3_BUCKET}"]
    # Run in its data directory (weed reads master.toml, filer.toml, security.toml from the current one),
    # and without the AWS_* and S3_* variables `weed mini` would turn into an extra identity or settings.
    proc = spawn(d, "seaweed", argv, cwd=data, env={name: "" for name in (
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "S3_BUCKET", "S3_TABLE_BUCKET", "S3_EXTERNAL_URL")})
    wait_for(d, "seaweed", proc, lambda: s3_status(ports["s3.port"], "HEAD", f"/{S3_BUCKET}") == 200)
    for secret, request in ((None, "an unsigned request"), ("not-the-secret", "a request signed with a wrong secret")):
        if (status := s3_status(ports["s3.port"], "HEAD", f"/{S3_BUCKET}", secret)) != 403:
            raise ServerError(f"SeaweedFS answered {request} with {status}, not 403: it does not check SigV4 "
                              f"(see {config} and {d}/logs/seaweed.log)")
    return {"UPLOADD_TEST_S3_ENDPOINT": f"http://{HOST}:{ports['s3.port']}", "UPLOADD_TEST_S3_BUCKET": S3_BUCKET,
            "UPLOADD_TEST_S3_ACCESS_KEY": S3_ACCESS_KEY, "UPLOADD_TEST_S3_SECRET_KEY": S3_SECRET_KEY,
            "UPLOADD_TEST_S3_REGION": S3_REGION}


def start_dav2(d: Path) -> dict[str, str]:
    """WsgiDAV (contrib/test/dav2_app.py): the share /dav in DIR/dav2/dav, and /nomkcol in DIR/dav2/nomkcol
    where MKCOL is refused. The password reaches it in its environment, not on its command line."""
    root = d / "dav2"
    for share in ("dav", "nomkcol"):
        (root / share).mkdir(parents=True, exist_ok=True)
    proc = spawn(d, "dav2", [str(VENV / "bin" / "python"), str(REPO / "contrib" / "test" / "dav2_app.py"),
                             "--host", HOST, "--port", "0", "--dir", str(root)],
                 env={"UPLOADD_TEST_DAV2_USER": DAV2_USER, "UPLOADD_TEST_DAV2_PASSWORD": DAV2_PASSWORD})
    listening = re.compile(r"^listening on http://[^\s:]+:(\d+)$", re.M)
    match = wait_for(d, "dav2", proc, lambda: listening.search((d / "logs" / "dav2.log").read_text()))
    port = int(match[1])
    basic = {"Authorization": "Basic " + base64.b64encode(f"{DAV2_USER}:{DAV2_PASSWORD}".encode()).decode()}
    # The behaviour the tests rely on, none of which leaves a file behind.
    for method, path, headers, want in (("PROPFIND", "/dav/", {"Depth": "0"}, 401),
                                        ("PROPFIND", "/dav/", {"Depth": "0", **basic}, 207),
                                        ("PROPFIND", "/nomkcol/", {"Depth": "0", **basic}, 207),
                                        ("PUT", "/dav/.no-such-folder/probe", basic, 409),
                                        ("MKCOL", "/nomkcol/.probe", basic, 403)):
        if (answer := http_request(port, method, path, headers)) is None or answer[0] != want:
            auth = "with" if "Authorization" in headers else "without"
            raise ServerError(f"WsgiDAV answered {method} {path} {auth} its password with {answer and answer[0]}, "
                              f"not {want} (see {d}/logs/dav2.log)")
    url = f"http://{HOST}:{port}"
    return {"UPLOADD_TEST_DAV2_URL": f"{url}/dav", "UPLOADD_TEST_DAV2_ROOT": str(root / "dav"),
            "UPLOADD_TEST_DAV2_USER": DAV2_USER, "UPLOADD_TEST_DAV2_PASSWORD": DAV2_PASSWORD,
            "UPLOADD_TEST_DAV2_NOMKCOL_URL": f"{url}/nomkcol", "UPLOADD_TEST_DAV2_NOMKCOL_ROOT": str(root / "nomkcol")}


SERVERS = [("nginx", start_nginx), ("nginx-tls", start_nginx_tls), ("receiver", start_receiver), ("tus", start_tus),
           ("seaweed", start_seaweed), ("dav2", start_dav2)]


def unix_socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False


def group_alive(pgid: int) -> bool:
    try:  # reap our own children in the group (after a failed start), or they linger as zombies
        os.waitpid(-pgid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def stop(d: Path) -> None:
    groups, at_once = [], set()
    for pid_file in sorted((d / "pids").glob("*.pid")):
        pid, started = pid_file.read_text().split()
        # A live process with this pid but another start time is not ours: the pid was reused.
        # With the leader gone its group may live on; Linux reuses no pid still in use as a group id.
        if start_time(int(pid)) in (started, None):
            groups.append(int(pid))
            if pid_file.stem in KILL_AT_ONCE:
                at_once.add(int(pid))
        pid_file.unlink()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pgid in groups:
            try:
                os.killpg(pgid, signal.SIGKILL if pgid in at_once else sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_TIMEOUT
        while (groups := [g for g in groups if group_alive(g)]) and time.monotonic() < deadline:
            time.sleep(0.05)
    for ports_file in (d / "pids").glob("*.ports"):  # unix sockets a killed server left in /tmp
        for port in ports_file.read_text().split():
            for leftover in Path("/tmp").glob(f"seaweedfs-*-{int(port)}.sock"):
                if leftover.is_socket() and not unix_socket_answers(leftover):
                    leftover.unlink(missing_ok=True)
        ports_file.unlink()


def start(d: Path, only: list[str] | None = None) -> None:
    chosen = [(name, starter) for name, starter in SERVERS if not only or name in only]
    unknown = set(only or []) - {name for name, _ in SERVERS}
    if unknown:
        raise ServerError(f"no server named {', '.join(sorted(unknown))} (there are: {', '.join(n for n, _ in SERVERS)})")
    if any(name in ("tus", "seaweed", "dav2") for name, _ in chosen):
        ensure_venv()
    stop(d)
    for old in ("nginx", "nginx-tls", "receiver", "tus", "seaweed", "dav2", "logs", "servers.env"):
        shutil.rmtree(d / old) if (d / old).is_dir() else (d / old).unlink(missing_ok=True)
    for sub in ("logs", "pids"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    env = {}
    try:
        for _, start_server in chosen:
            env.update(start_server(d))
    except BaseException:
        stop(d)
        raise
    (d / "servers.env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop", "env"])
    parser.add_argument("--dir", type=Path, default=REPO / ".build" / "test-servers",
                        help="state directory (default: <repo>/.build/test-servers)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="start only this server (repeatable), e.g. nginx inside a test's network namespace")
    args = parser.parse_args()
    d = args.dir.resolve()
    try:
        if args.command == "start":
            start(d, args.only)
            print((d / "servers.env").read_text(), end="")
        elif args.command == "stop":
            stop(d)
        elif (d / "servers.env").exists():
            print((d / "servers.env").read_text(), end="")
        else:
            raise ServerError(f"no {d}/servers.env: run `start` first")
    except (ServerError, OSError) as error:
        print(f"servers.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
