#!/usr/bin/env python3
"""Try uploadd against every server of the test matrix, as a user would, and print what happened.

    python3 contrib/test/servers.py start
    python3 contrib/test/try_matrix.py [--bin .build/debug] [--size 5M] [--timeout 120] [--only NAME]...
    python3 contrib/test/servers.py stop

Starts a daemon of its own (a scratch state, cache and socket; the config has one remote per
server, NAME, and NAME-wrong with a wrong password or secret), then for each server of
UPLOADD_TEST_MATRIX:

  upload   `uploadctl add FILE --to NAME:try/upload/a/b/` (new nested folders; NAME: alone for tus and
           for a POST endpoint without folders), FILE random, --size bytes;
           the job is waited for up to --timeout seconds, and the bytes on disk compared when the
           matrix says where they land
  wrong    the same to NAME-wrong (servers that check credentials)
  delete   `uploadctl delete ID` of the upload, and whether the file is gone from disk
  remote   `uploadctl remotes --test NAME`, and NAME-wrong

It prints one Markdown table row per server: pass, or the job's state, its error and how long it
took. Every uploadctl command runs under a timeout; the daemon is stopped at the end.
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENDED = {"completed", "failed", "canceled"}


def size_arg(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMG]?)", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text}")
    return int(match[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[match[2]]


class Daemon:
    def __init__(self, bin_dir: Path, scratch: Path, config: str):
        self.bin_dir, self.scratch = bin_dir, scratch
        (scratch / "sock").mkdir(mode=0o700)
        self.socket = scratch / "sock" / "control.sock"
        (scratch / "uploadd.conf").write_text(config)
        self.log = open(scratch / "daemon.log", "wb")
        self.proc = subprocess.Popen(
            [str(bin_dir / "uploadd"), "--socket", str(self.socket), "--state-dir", str(scratch / "state"),
             "--cache-dir", str(scratch / "cache"), "--config", str(scratch / "uploadd.conf"), "--log-level", "debug"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
            env={k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LISTEN_", "NOTIFY_"))})
        deadline = time.monotonic() + 20
        while not self.socket.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"uploadd did not start; see {scratch}/daemon.log")
            time.sleep(0.05)

    def ctl(self, *args: str, timeout: float = 120) -> tuple[int, str, str]:
        try:
            done = subprocess.run([str(self.bin_dir / "uploadctl"), "--socket", str(self.socket), *args],
                                  capture_output=True, text=True, timeout=timeout)
            return done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired:
            return -1, "", f"timed out after {timeout:.0f} s"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def remote_section(name: str, entry: dict, scratch: Path, wrong: bool) -> str:
    lines = [f"[remote {name}]"]
    protocol = entry["protocol"]
    if protocol == "s3":
        s3 = entry["s3"]
        secret = scratch / f"{name}.secret"
        secret.write_text(s3["secret_key"] + ("-wrong" if wrong else "") + "\n")
        secret.chmod(0o600)
        lines += [f"url = {entry['url']}", "protocol = s3", f"endpoint = {s3['endpoint']}", f"region = {s3['region']}",
                  f"access_key_id = {s3['access_key']}", f"secret_access_key_file = {secret}"]
    else:
        lines += [f"url = {entry['url']}", f"protocol = {protocol}"]
        if entry["user"]:
            password = scratch / f"{name}.password"
            password.write_text(entry["password"] + ("-wrong" if wrong else "") + "\n")
            password.chmod(0o600)
            lines += [f"user = {entry['user']}", f"password_file = {password}"]
        for key, value in entry["headers"].items():
            if wrong and key.lower() == "authorization":
                value += "-wrong"
            lines.append(f"header = {key}: {value}")
        for key, value in entry["fields"].items():
            if wrong and entry["auth"] == "field":  # the fields carry the token
                value += "-wrong"
            lines.append(f"field = {key}={value}")
        if entry["file_field"] and protocol == "post":
            lines.append(f"file_field = {entry['file_field']}")
    return "\n".join(lines) + "\n"


def checks_credentials(entry: dict) -> bool:
    return entry["auth"] in ("basic", "bearer", "field", "sigv4")


def landed(entry: dict, job: dict, name: str, remote_path: str) -> Path | None:
    """Where the matrix says the uploaded file is on disk, or None if it does not say."""
    root = entry["root"]
    if not root:
        return None
    layout = entry["layout"]
    if layout == "path":
        return Path(root) / remote_path / name
    if layout == "name":
        return Path(root) / name
    if layout == "name-increment":
        stem, ext = os.path.splitext(name)
        return Path(root) / f"{stem}.0001{ext}"
    if layout == "upload-id":
        url = (job.get("result") or {}).get("url") or ""
        return Path(root) / url.rstrip("/").rsplit("/", 1)[-1] if url else None
    return None


def destination_path(entry: dict, kind: str) -> str:
    """New nested folders where the server has folders; the URL as it is for a tus creation
    endpoint or a POST endpoint that takes no path."""
    if entry["protocol"] == "tus" or (entry["protocol"] == "post" and entry["layout"] != "path"):
        return ""
    return f"try/{kind}/a/b/"


def wait_job(daemon: Daemon, job_id: int, timeout: float) -> tuple[dict, float]:
    started = time.monotonic()
    job: dict = {}
    while time.monotonic() - started < timeout:
        code, out, _ = daemon.ctl("--json", "show", str(job_id), timeout=30)
        if code == 0 and out.strip():
            job = json.loads(out)
            if job.get("state") in ENDED:
                break
        time.sleep(0.25)
    return job, time.monotonic() - started


def job_seconds(job: dict) -> float:
    """From the job's creation to its last change (its end, once it has ended)."""
    def parse(text: str) -> datetime.datetime:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    try:
        return (parse(job["updated_at"]) - parse(job["created_at"])).total_seconds()
    except (KeyError, ValueError):
        return float("nan")


def describe(job: dict, elapsed: float, timeout: float) -> str:
    state = job.get("state", "?")
    error = job.get("error") or {}
    text = error.get("message") if isinstance(error, dict) else str(error)
    if state == "completed":
        result = job.get("result") or {}
        return f"completed {result.get('status', '')} in {elapsed:.1f} s"
    if state not in ENDED:
        return (f"still {state} after {timeout:.0f} s ({job.get('attempts', '?')} attempts"
                f"{'; ' + text if text else ''})")
    return f"{state} in {elapsed:.1f} s ({job.get('attempts', '?')} attempts): {text}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", type=Path, default=REPO / ".build" / "debug", help="where uploadd and uploadctl are")
    parser.add_argument("--matrix", type=Path, help="matrix.json (default: UPLOADD_TEST_MATRIX of servers.env)")
    parser.add_argument("--size", type=size_arg, default=5 << 20, help="bytes to upload (default 5M)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for a job (default 120)")
    parser.add_argument("--only", action="append", metavar="NAME", help="only this server (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (daemon log, config)")
    parser.add_argument("--scripted", action="store_true",
                        help="also every scenario of the scripted server, as a put server (see-other: post; "
                             "the s3 ones as S3, the scenario the bucket)")
    args = parser.parse_args()

    matrix_path = args.matrix
    if matrix_path is None:
        env = REPO / ".build" / "test-servers" / "servers.env"
        values = dict(line.split("=", 1) for line in env.read_text().splitlines() if "=" in line)
        matrix_path = Path(values["UPLOADD_TEST_MATRIX"])
    servers = json.loads(matrix_path.read_text())["servers"]
    if args.scripted:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from scripted_http import SCENARIOS
        values = dict(line.split("=", 1) for line in
                      (matrix_path.parent / "servers.env").read_text().splitlines() if "=" in line)
        for scenario, behaviour in SCENARIOS.items():
            entry = {"name": f"scripted-{scenario}", "protocol": "post" if scenario == "see-other" else "put",
                     "url": f"{values['UPLOADD_TEST_SCRIPTED_URL']}/{scenario}/",
                     "root": f"{values['UPLOADD_TEST_SCRIPTED_DIR']}/{scenario}", "layout": "path",
                     "auth": "none", "user": None, "password": None, "headers": {}, "fields": {},
                     "file_field": None, "s3": None}
            if behaviour.s3:  # the scenario is the bucket
                entry.update(protocol="s3", url=f"s3://{scenario}/",
                             s3={"endpoint": values["UPLOADD_TEST_SCRIPTED_URL"], "bucket": scenario,
                                 "region": "us-east-1", "access_key": "scripted", "secret_key": "scripted-secret",
                                 "path_style": True})
            servers.append(entry)
    servers = [e for e in servers if not args.only or e["name"] in args.only]

    scratch = Path(tempfile.mkdtemp(prefix="try-matrix-"))
    source = scratch / f"try-{os.getpid()}.bin"
    source.write_bytes(os.urandom(args.size))
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    config = "[daemon]\n" + "".join(remote_section(e["name"], e, scratch, False) +
                                    (remote_section(e["name"] + "-wrong", e, scratch, True) if checks_credentials(e)
                                     else "") for e in servers)
    daemon = Daemon(args.bin, scratch, config)
    rows = []
    try:
        jobs = {}
        for e in servers:  # every upload at once: the slow failures overlap
            for kind, remote in (("upload", e["name"]), ("wrong", e["name"] + "-wrong")):
                if kind == "wrong" and not checks_credentials(e):
                    continue
                folder = destination_path(e, kind)
                code, out, err = daemon.ctl("--json", "add", str(source), "--to", f"{remote}:{folder}", timeout=60)
                added = time.monotonic()
                if code != 0 and not out.strip():
                    jobs[(e["name"], kind)] = (None, f"add failed: {err.strip() or out.strip()}", added, folder)
                    continue
                reply = json.loads(out)
                if not reply.get("jobs"):
                    jobs[(e["name"], kind)] = (None, f"add failed: {reply.get('errors')}", added, folder)
                    continue
                jobs[(e["name"], kind)] = (reply["jobs"][0]["id"], None, added, folder)
        results = {}
        for key, (job_id, failure, added, folder) in jobs.items():
            if job_id is None:
                results[key] = ({}, failure)
                continue
            left = max(1.0, args.timeout - (time.monotonic() - added))
            job, _ = wait_job(daemon, job_id, left)
            results[key] = (job, describe(job, job_seconds(job), args.timeout))
        for e in servers:
            name = e["name"]
            job, upload = results[(name, "upload")]
            where = (landed(e, job, source.name, destination_path(e, "upload"))
                     if job.get("state") == "completed" else None)
            if where is not None:
                try:
                    ok = hashlib.sha256(where.read_bytes()).hexdigest() == digest
                    upload += "; bytes match" if ok else f"; bytes differ at {where}"
                except OSError:
                    upload += f"; no file at {where}"
            wrong = results.get((name, "wrong"), ({}, "(takes any credentials)"))[1]
            delete = "-"
            if job.get("state") == "completed":
                started = time.monotonic()
                code, out, err = daemon.ctl("delete", str(job["id"]), timeout=args.timeout)
                delete = f"exit {code} in {time.monotonic() - started:.1f} s: {(out + err).strip()[:160]}"
                if where is not None:
                    delete += "; file gone" if not where.exists() else "; file still there"
            remote = []
            for test in (name, name + "-wrong") if checks_credentials(e) else (name,):
                started = time.monotonic()
                code, out, err = daemon.ctl("remotes", "--test", test, timeout=args.timeout)
                remote.append(f"{'ok' if code == 0 else 'FAIL'} {time.monotonic() - started:.1f} s: "
                              f"{(out + err).strip()[:200]}")
            rows.append((name, e["protocol"], upload, wrong, delete, " / ".join(remote)))
    finally:
        daemon.stop()
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"scratch kept: {scratch}", file=sys.stderr)
    print("| server | protocol | upload (new nested folder) | wrong password | delete | remotes --test (right / wrong) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(cell.replace("|", "/").replace("\n", " ") for cell in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
