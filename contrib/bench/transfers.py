"""Scenarios that move bytes: the physical ceiling (0), PUT (1), many small PUTs (2, and 12: many tiny ones),
tus (3), S3 (4), HTTPS with HTTP/1.1 and HTTP/2 (15), the global rate limit (16)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import measure
from benchenv import BENCH_VENV, log
from context import MIB, Bench, human_size, row, values
from daemon import Uploadd, fresh_uploadd

HERE = os.path.dirname(os.path.abspath(__file__))


def throughput(size: int, wall: float) -> float:
    return size / MIB / wall


def ceiling(b: Bench) -> dict:
    """Loopback TCP with iperf3, and the source file's read speed with dd."""
    size = b.size["big"]
    source = b.file("big.bin", size)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = b.registry.add("iperf3", subprocess.Popen(
        ["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True))

    def iperf(i):
        for _ in range(50):  # the server may still be starting
            ran = measure.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(b.size["iperf_seconds"]), "-J"])
            try:
                received = json.loads(ran.stdout)["end"]["sum_received"]["bits_per_second"]
                return {"mibps": received / 8 / MIB}
            except (ValueError, KeyError):  # "unable to connect": not listening yet
                time.sleep(0.1)
        raise RuntimeError(f"iperf3 failed: {ran.stdout[-300:]}{ran.stderr[-300:]}")

    def dd(i):
        ran = measure.run(["dd", f"if={source}", "of=/dev/null", "bs=2M"]).check("dd")
        return {"mibps": throughput(size, ran.wall)}

    try:
        raw, failed = b.alternate([("iperf3", iperf), ("dd", dd)])
    finally:
        b.registry.stop(server)
    return {"title": "physical ceiling", "raw": raw, "rows": [
        row("loopback TCP, iperf3 -t %d" % b.size["iperf_seconds"], "MiB/s", values(raw["iperf3"], "mibps"),
            subject="iperf3", not_run=failed.get("iperf3")),
        row(f"read the {human_size(size)} source on tmpfs, dd bs=2M", "MiB/s", values(raw["dd"], "mibps"),
            subject="dd", not_run=failed.get("dd")),
    ]}


def put_big(b: Bench) -> dict:
    size = b.size["big"]
    source = b.file("big.bin", size)
    url = b.nginx + "/dav/bench/"

    def curl(i):
        ran = measure.run(["curl", "-sS", "--fail", "-o", "/dev/null", "-T", str(source), f"{url}curl-{i}/"])
        ran.check("curl -T")
        b.take_dav(f"curl-{i}/big.bin", size)
        return {"wall": ran.wall, "mibps": throughput(size, ran.wall), "cpu": ran.cpu, "rss_mib": ran.maxrss_mib}

    def uploadd(snapshot):
        def one(i):
            tag = f"ud{snapshot}-{i}"
            result = b.uploadd_run([str(source), "--to", f"{url}{tag}/", "--protocol", "put", "--snapshot", snapshot])
            b.take_dav(f"{tag}/big.bin", size)
            return {**result, "mibps": throughput(size, result["wall"])}
        return one

    def curl_and_copy(i):
        # What copying alongside costs at best: curl -T while cp copies the source into a new file on
        # the cache's file system. On this VM new pages are what varies most: a page the host
        # must back afresh costs ~10x one freed moments before, and a copy and nginx's file both
        # take 1 GiB of them (README, "Targets missed").
        target = b.dir / "transfer" / f"cp-floor-{i}"
        target.parent.mkdir(parents=True, exist_ok=True)
        script = ('cp "$1" "$2" & copier=$!; curl -sS --fail -o /dev/null -T "$1" "$3"; sent=$?; '
                  'wait $copier || exit 1; exit $sent')
        ran = measure.run(["sh", "-c", script, "sh", str(source), str(target), f"{url}curlcp-{i}/"])
        target.unlink(missing_ok=True)
        ran.check("curl -T beside cp")
        b.take_dav(f"curlcp-{i}/big.bin", size)
        return {"wall": ran.wall, "mibps": throughput(size, ran.wall)}

    # Each run needs up to 2 × size of new pages (a copy and nginx's file): warmed for every one.
    raw, failed = b.alternate([("curl", curl), ("uploadd", uploadd("none")), ("uploadd-copy", uploadd("auto")),
                               ("curl-cp", curl_and_copy)], warm_bytes=3 * size)
    b.memo["put_big"] = (raw, failed)
    b.drop_file("big.bin")  # tmpfs is memory: keep only what the next scenario needs
    peer = "curl -T"
    common = {"peer": peer, "not_run": failed.get("uploadd"), "peer_not_run": failed.get("curl")}
    return {"title": f"one {human_size(size)} file, PUT to nginx (tmpfs)", "raw": raw, "rows": [
        row("throughput, add --wait --snapshot none", "MiB/s", values(raw["uploadd"], "mibps"),
            peer_values=values(raw["curl"], "mibps"), target="≥ 0.95× curl", check=("ratio", ">=", 0.95), **common),
        row("client CPU (uploadctl + daemon), user+sys", "s", values(raw["uploadd"], "cpu"),
            peer_values=values(raw["curl"], "cpu"), target="≤ 1.2× curl", check=("ratio", "<=", 1.2), **common),
        row("throughput, default snapshot (a copy into the cache first, on another file system)", "MiB/s",
            values(raw["uploadd-copy"], "mibps"), peer=peer, peer_values=values(raw["curl"], "mibps"),
            target="≥ 0.8× curl", check=("ratio", ">=", 0.8), not_run=failed.get("uploadd-copy"),
            peer_not_run=failed.get("curl")),
        row("throughput, default snapshot, against curl beside a copy", "MiB/s", values(raw["uploadd-copy"], "mibps"),
            peer="curl -T while cp copies the source into the cache's file system",
            peer_values=values(raw["curl-cp"], "mibps"), target="(informative: the floor of copying alongside)",
            not_run=failed.get("uploadd-copy"), peer_not_run=failed.get("curl-cp")),
    ]}


def put_many(b: Bench) -> dict:
    """2,000 files of 64 KiB (issue 6, and issue 16's first two rows), with rclone beside curl."""
    return many_files(b, "small", with_rclone=True)


def put_tiny(b: Bench) -> dict:
    """20,000 files of 4 KiB (issue 16): what a queue of many small files costs per file."""
    return many_files(b, "tiny", with_rclone=False)


# Issue 51's targets against `curl -Z --parallel-max 4`: (files/s with --snapshot none, files/s with
# the default snapshot, client CPU). The tiny files' default-snapshot run adds their folder, as a user
# with 20,000 files would.
MANY_FILES_TARGETS = {"small": (1.0, 0.8, 1.0), "tiny": (1.1, 1.0, 1.0)}


def many_files(b: Bench, kind: str, with_rclone: bool) -> dict:
    files = b.small_files(kind)
    none_target, copy_target, cpu_target = MANY_FILES_TARGETS[kind]
    as_folder = kind == "tiny"
    count, size = len(files), b.size[f"{kind}_size"]
    base = b.nginx + "/dav/bench/"
    rclone_config = b.dir / "rclone.conf"
    rclone_config.write_text("")

    def check_all(tag, folder=""):
        for f in files:
            b.take_dav(f"{tag}/{folder}{f.name}", size)

    def curl(i):
        listing = b.dir / f"curl-list-{i}"
        with open(listing, "w") as out:
            for f in files:
                out.write(f'upload-file = "{f}"\nurl = "{base}curl-{i}/{f.name}"\noutput = "/dev/null"\n')
        ran = measure.run(["curl", "-Z", "--parallel-max", "4", "-sS", "--fail", "-K", str(listing)])
        ran.check("curl -Z")
        check_all(f"curl-{i}")
        return {"wall": ran.wall, "files_per_s": count / ran.wall, "cpu": ran.cpu}

    def rclone(i):
        ran = measure.run(["rclone", "--config", str(rclone_config), "copy", "--transfers", "4",
                           "--webdav-url", b.nginx + "/dav/", str(files[0].parent), f":webdav:bench/rclone-{i}"])
        ran.check("rclone copy")
        check_all(f"rclone-{i}")
        return {"wall": ran.wall, "files_per_s": count / ran.wall, "cpu": ran.cpu}

    def uploadd(snapshot, folder=False):
        def one(i):
            tag = f"ud{snapshot}-{i}"
            sources = [str(files[0].parent)] if folder else list(map(str, files))
            result = b.uploadd_run([*sources, "--to", f"{base}{tag}/", "--protocol", "put", "--snapshot", snapshot],
                                   wait_separately=True)
            check_all(tag, f"{files[0].parent.name}/" if folder else "")
            return {**result, "files_per_s": count / result["wall"]}
        return one

    # rclone's WebDAV pacer keeps calls 10 ms apart (a PUT and a PROPFIND a file: ~30 files/s
    # whatever --transfers says), so 2,000 files take it over a minute: at most 2 runs of it.
    contenders = [("curl", curl), ("uploadd", uploadd("none")), ("uploadd-copy", uploadd("auto", folder=as_folder))]
    if with_rclone and shutil.which("rclone"):
        contenders.insert(2, ("rclone", rclone, 2))
    # The copies' packs and nginx's files take new pages: as many are warmed before every run.
    raw, failed = b.alternate(contenders, warm_bytes=2 * sum(f.stat().st_size for f in files))
    failed.setdefault("rclone", None if shutil.which("rclone") else "rclone is not installed")
    raw.setdefault("rclone", [])
    mine = {"not_run": failed.get("uploadd")}
    curl = {"peer": "curl -Z --parallel-max 4", "peer_not_run": failed.get("curl")}
    rows = [
        row("files/s, --snapshot none", "files/s", values(raw["uploadd"], "files_per_s"),
            peer_values=values(raw["curl"], "files_per_s"), target=f"≥ {none_target}× parallel curl",
            check=("ratio", ">=", none_target), **curl, **mine),
        row("client CPU (uploadctl ×2 + daemon)", "s", values(raw["uploadd"], "cpu"),
            peer_values=values(raw["curl"], "cpu"), target=f"≤ {cpu_target}× curl",
            check=("ratio", "<=", cpu_target), **curl, **mine),
        row("files/s, default snapshot (copies)" + (", one add of their folder" if as_folder else ""), "files/s",
            values(raw["uploadd-copy"], "files_per_s"), peer_values=values(raw["curl"], "files_per_s"),
            target=f"≥ {copy_target}× parallel curl", check=("ratio", ">=", copy_target),
            not_run=failed.get("uploadd-copy"), **{**curl}),
    ]
    if with_rclone:
        rows.insert(1, row("files/s, --snapshot none", "files/s", values(raw["uploadd"], "files_per_s"),
                           peer="rclone copy --transfers 4", peer_values=values(raw["rclone"], "files_per_s"),
                           target="(informative)", peer_not_run=failed.get("rclone"), **mine))
    title = f"{count:,} files of {human_size(size)}, PUT to nginx, one add then wait"
    return {"title": title, "raw": raw, "rows": rows}


def tus(b: Bench) -> dict:
    size, chunk = b.size["tus_size"], b.size["tus_chunk"]
    source = b.file("tus.bin", size)
    url = b.env["UPLOADD_TEST_TUS_URL"]
    store = b.env["UPLOADD_TEST_TUS_DIR"]
    pgid = b.server_pgid("tus")

    def server_share(fn):
        def measured(i):
            before = measure.group_cpu_seconds(pgid)
            result = fn(i)
            result["server_cpu"] = measure.group_cpu_seconds(pgid) - before
            result["server_share"] = result["server_cpu"] / result["wall"]
            for entry in os.scandir(store):
                if entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)
            return result
        return measured

    def tuspy(i):
        ran = measure.run([str(BENCH_VENV / "bin" / "python"), os.path.join(HERE, "tus_peer.py"), url, str(source),
                           str(chunk)]).check("tuspy")
        return {"wall": ran.wall, "mibps": throughput(size, ran.wall), "cpu": ran.cpu}

    def uploadd(i):
        result = b.uploadd_run([str(source), "--to", url, "--protocol", "tus", "--chunk-size", str(chunk),
                                "--snapshot", "none"])
        # The store holds only this run's upload (server_share empties it after each run).
        stored = sorted(entry.stat().st_size for entry in os.scandir(store)
                        if entry.is_file(follow_symlinks=False) and not entry.name.endswith(".info"))
        if stored != [size]:
            raise RuntimeError(f"the tus server holds uploads of {stored} bytes, not one of {size}")
        return {**result, "mibps": throughput(size, result["wall"])}

    raw, failed = b.alternate([("tuspy", server_share(tuspy)), ("uploadd", server_share(uploadd))])
    b.drop_file("tus.bin")
    common = {"peer": f"tuspy, chunk {human_size(chunk)}", "not_run": failed.get("uploadd"),
              "peer_not_run": failed.get("tuspy")}
    return {"title": f"one {human_size(size)} file, tus to tuspyserver, chunks of {human_size(chunk)}", "raw": raw,
            "rows": [
        row("throughput", "MiB/s", values(raw["uploadd"], "mibps"), peer_values=values(raw["tuspy"], "mibps"),
            target="≥ 1.0× tuspy", check=("ratio", ">=", 1.0), **common),
        row("client CPU", "s", values(raw["uploadd"], "cpu"), peer_values=values(raw["tuspy"], "cpu"), **common),
        row("server CPU / wall time (1.0 = the server is CPU-bound)", "", values(raw["uploadd"], "server_share"),
            peer_values=values(raw["tuspy"], "server_share"), **common),
    ]}


def s3(b: Bench) -> dict:
    size, chunk = b.size["s3_size"], b.size["s3_chunk"]
    source = b.file("s3.bin", size)
    e = b.env
    bucket, endpoint = e["UPLOADD_TEST_S3_BUCKET"], e["UPLOADD_TEST_S3_ENDPOINT"]
    aws = str(BENCH_VENV / "bin" / "aws")
    (b.dir / "aws-config").write_text(f"[default]\nregion = {e['UPLOADD_TEST_S3_REGION']}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=e["UPLOADD_TEST_S3_ACCESS_KEY"], AWS_SECRET_ACCESS_KEY=e["UPLOADD_TEST_S3_SECRET_KEY"],
               AWS_DEFAULT_REGION=e["UPLOADD_TEST_S3_REGION"], AWS_CONFIG_FILE=str(b.dir / "aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(b.dir / "aws-credentials-none"), AWS_EC2_METADATA_DISABLED="true")
    pgid = b.server_pgid("seaweed")

    def clean():
        measure.run([aws, "s3", "rm", f"s3://{bucket}/bench/", "--recursive", "--only-show-errors",
                     "--endpoint-url", endpoint], env=env)

    def with_server(fn, stored_key=None):
        """Measures the server's CPU over `fn`; then, given the key `fn` uploaded to, checks that
        the object holds `size` bytes (outside the measured span), and empties the bucket."""
        def measured(i):
            before = measure.group_cpu_seconds(pgid)
            result = fn(i)
            result["server_cpu"] = measure.group_cpu_seconds(pgid) - before
            if stored_key:
                head = measure.run([aws, "s3api", "head-object", "--bucket", bucket, "--key", stored_key(i),
                                    "--endpoint-url", endpoint], env=env)
                try:
                    stored = json.loads(head.stdout)["ContentLength"]
                except (ValueError, KeyError):
                    raise RuntimeError(f"s3://{bucket}/{stored_key(i)} is not there: {head.stderr[-300:]}") from None
                if stored != size:
                    raise RuntimeError(f"s3://{bucket}/{stored_key(i)} holds {stored} bytes, not {size}")
            clean()
            return result
        return measured

    def awscli(i):
        ran = measure.run([aws, "s3", "cp", str(source), f"s3://{bucket}/bench/aws-{i}/s3.bin", "--only-show-errors",
                           "--endpoint-url", endpoint], env=env).check("aws s3 cp")
        return {"wall": ran.wall, "mibps": throughput(size, ran.wall), "cpu": ran.cpu}

    def uploadd(i):
        result = b.uploadd_run([str(source), "--to", f"benchs3:ud-{i}/", "--chunk-size", str(chunk),
                                "--snapshot", "none"])
        return {**result, "mibps": throughput(size, result["wall"])}

    raw, failed = b.alternate([("aws", with_server(awscli)),
                               ("uploadd", with_server(uploadd, stored_key=lambda i: f"bench/ud-{i}/s3.bin"))])
    b.drop_file("s3.bin")
    common = {"peer": "aws s3 cp", "not_run": failed.get("uploadd"), "peer_not_run": failed.get("aws")}
    return {"title": f"one {human_size(size)} file, S3 multipart to SeaweedFS, parts of {human_size(chunk)}",
            "raw": raw, "rows": [
        row("throughput", "MiB/s", values(raw["uploadd"], "mibps"), peer_values=values(raw["aws"], "mibps"),
            target="≥ 1.0× aws-cli", check=("ratio", ">=", 1.0), **common),
        row("client CPU", "s", values(raw["uploadd"], "cpu"), peer_values=values(raw["aws"], "cpu"), **common),
        row("server CPU (SeaweedFS)", "s", values(raw["uploadd"], "server_cpu"),
            peer_values=values(raw["aws"], "server_cpu"), **common),
    ]}


def huge_upload(b: Bench) -> tuple[dict, dict]:
    """For scenario 7: uploadd's RSS while it PUTs the `big` (1 GiB) and `huge` (4 GiB) files, sampled
    every 50 ms, alternating, on a daemon that has done nothing else: what earlier scenarios left in
    its heap must not pass for the cost of a bigger file."""
    url = b.nginx + "/dav/bench/"
    b.stop_daemons()

    def upload(name, size):
        def one(i):
            source = b.file(name, size)
            result = b.uploadd_run([str(source), "--to", f"{url}mem-{name}-{i}/", "--protocol", "put", "--snapshot", "none"])
            b.take_dav(f"mem-{name}-{i}/{name}", size)
            return {**result, "mibps": throughput(size, result["wall"])}
        return one

    log(f"  uploading {human_size(b.size['big'])} and {human_size(b.size['huge'])} files for memory samples")
    try:
        return b.alternate([("uploadd-big", upload("big.bin", b.size["big"])),
                            ("uploadd", upload("huge.bin", b.size["huge"]))])
    finally:
        b.drop_file("big.bin")
        b.drop_file("huge.bin")


def https_versions(b: Bench) -> dict:
    """HTTP/1.1 against HTTP/2 over TLS (issue 16: "consider HTTP/2 multiplexing; measure it against
    curl given the same option"): the small files and the big file to an nginx that offers HTTP/2,
    and a file through nginx as an HTTP/2 reverse proxy that streams bodies on (as upload apps ask),
    50 ms of round trip away (delay_proxy.py). Each by curl and by uploadd with each version; the
    uploadd of each version is a daemon of its own, so that no connection of one version serves the
    other. uploadd speaks HTTP/1.1 unless a remote says `http2 = true`: these rows are why."""
    files = b.small_files("small")
    count, small = len(files), b.size["small_size"]
    size, far_size = b.size["big"], b.size["far_size"]
    source, far_source = b.file("big.bin", size), b.file("far.bin", far_size)
    ca = b.env["UPLOADD_TEST_TLS_CA"]
    near = b.tls_h2 + "/dav/bench/"
    delay = b.size["far_delay"]
    proxy = b.registry.add("delay-proxy", subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "delay_proxy.py"),
         b.env["UPLOADD_TEST_TLS_H2_PROXY_URL"].rsplit(":", 1)[1], str(delay)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    far = f"https://127.0.0.1:{proxy.stdout.readline().split()[1]}/dav/bench/"
    daemons = {}
    try:
        for version, http2 in (("1.1", "false"), ("2", "true")):
            config = "".join(f"[remote {name}]\nprotocol = put\nurl = {url}\nca_file = {ca}\nhttp2 = {http2}\n\n"
                             for name, url in (("near", near), ("far", far)))
            daemons[version] = Uploadd(b.dir / f"https-{version}", b.registry, config)
            daemons[version].start()
        raw, failed = b.alternate([contender for version in ("1.1", "2") for contender in (
            (f"curl-{version}", curl_tls_many(b, files, version, near, ca)),
            (f"uploadd-{version}", uploadd_tls_many(b, files, daemons[version], version)),
            (f"curl-big-{version}", curl_tls_one(b, source, version, near, ca, "big")),
            (f"uploadd-big-{version}", uploadd_tls_one(b, source, daemons[version], "near", version, "big")),
            (f"curl-far-{version}", curl_tls_one(b, far_source, version, far, ca, "far")),
            (f"uploadd-far-{version}", uploadd_tls_one(b, far_source, daemons[version], "far", version, "far")),
        )])
    finally:
        for daemon in daemons.values():
            daemon.stop()
        b.registry.stop(proxy)
    b.drop_file("big.bin")
    b.drop_file("far.bin")

    def pair(metric, unit, key, ours, peer, peer_name, at_least=None):
        target = f"≥ {at_least}× curl, same HTTP version" if at_least else "(informative)"
        return row(metric, unit, values(raw[ours], key), peer=peer_name, peer_values=values(raw[peer], key),
                   target=target, check=("ratio", ">=", at_least) if at_least else None,
                   not_run=failed.get(ours), peer_not_run=failed.get(peer))

    many, big = f"{count:,} × {human_size(small)}, files/s", f"one {human_size(size)}, MiB/s"
    far_metric = f"one {human_size(far_size)} through an HTTP/2 proxy {delay * 2000:.0f} ms away, MiB/s"
    return {"title": "HTTPS: HTTP/1.1 (uploadd's default) against HTTP/2 (a remote's `http2 = true`)", "raw": raw,
            "rows": [
                pair(f"{many}, HTTP/1.1", "files/s", "files_per_s", "uploadd-1.1", "curl-1.1",
                     "curl --http1.1 -Z --parallel-max 4", at_least=1.0),
                pair(f"{many}, HTTP/2", "files/s", "files_per_s", "uploadd-2", "curl-2",
                     "curl --http2 -Z --parallel-max 4", at_least=1.0),
                pair(f"{big}, HTTP/1.1", "MiB/s", "mibps", "uploadd-big-1.1", "curl-big-1.1", "curl --http1.1 -T"),
                pair(f"{big}, HTTP/2", "MiB/s", "mibps", "uploadd-big-2", "curl-big-2", "curl --http2 -T"),
                pair(f"{far_metric}, uploadd's default against libcurl's (HTTP/2)", "MiB/s", "mibps",
                     "uploadd-far-1.1", "curl-far-2", "curl --http2 -T"),
                pair(f"{far_metric}, HTTP/1.1", "MiB/s", "mibps", "uploadd-far-1.1", "curl-far-1.1",
                     "curl --http1.1 -T"),
                pair(f"{far_metric}, HTTP/2", "MiB/s", "mibps", "uploadd-far-2", "curl-far-2", "curl --http2 -T"),
            ]}


def curl_tls_many(b: Bench, files: list[Path], version: str, base: str, ca: str):
    def one(i):
        tag = f"curl{version}-{i}"
        listing = b.dir / f"curl-tls-list-{tag}"
        with open(listing, "w") as out:
            for f in files:
                out.write(f'upload-file = "{f}"\nurl = "{base}{tag}/{f.name}"\noutput = "/dev/null"\n')
        ran = measure.run(["curl", f"--http{version}", "--cacert", ca, "-Z", "--parallel-max", "4", "-sS", "--fail",
                           "-K", str(listing)])
        ran.check(f"curl --http{version} -Z")
        for f in files:
            b.take_dav(f"{tag}/{f.name}", f.stat().st_size)
        return {"wall": ran.wall, "files_per_s": len(files) / ran.wall, "cpu": ran.cpu}
    return one


def uploadd_tls_many(b: Bench, files: list[Path], daemon: Uploadd, version: str):
    def one(i):
        tag = f"ud{version}-{i}"
        result = b.uploadd_run([*map(str, files), "--to", f"near:{tag}/", "--snapshot", "none"],
                               wait_separately=True, daemon=daemon)
        for f in files:
            b.take_dav(f"{tag}/{f.name}", f.stat().st_size)
        return {**result, "files_per_s": len(files) / result["wall"]}
    return one


def curl_tls_one(b: Bench, source: Path, version: str, base: str, ca: str, kind: str):
    def one(i):
        tag = f"curl{kind}{version}-{i}"
        ran = measure.run(["curl", f"--http{version}", "--cacert", ca, "-sS", "--fail", "-o", "/dev/null",
                           "-T", str(source), f"{base}{tag}/"])
        ran.check(f"curl --http{version} -T")
        size = source.stat().st_size
        b.take_dav(f"{tag}/{source.name}", size)
        return {"wall": ran.wall, "mibps": throughput(size, ran.wall), "cpu": ran.cpu}
    return one


def uploadd_tls_one(b: Bench, source: Path, daemon: Uploadd, remote: str, version: str, kind: str):
    def one(i):
        tag = f"ud{kind}{version}-{i}"
        result = b.uploadd_run([str(source), "--to", f"{remote}:{tag}/", "--snapshot", "none"], daemon=daemon)
        size = source.stat().st_size
        b.take_dav(f"{tag}/{source.name}", size)
        return {**result, "mibps": throughput(size, result["wall"])}
    return one


def global_limit(b: Bench) -> dict:
    """Four PUTs at once under `uploadctl limit`: the rate of all of them together against the limit."""
    rate_mib, size = b.size["limit_rate_mib"], b.size["limit_size"]
    files = [b.file(f"limit-{k}.bin", size) for k in range(4)]
    base = b.nginx + "/dav/bench/"

    def one(daemon: Uploadd):
        def run(i):
            tag = f"limit-{i}"
            result = b.uploadd_run([*map(str, files), "--to", f"{base}{tag}/", "--protocol", "put",
                                    "--snapshot", "none"], daemon=daemon)
            for f in files:
                b.take_dav(f"{tag}/{f.name}", size)
            return {**result, "of_limit": throughput(size * len(files), result["wall"]) / rate_mib}
        return run

    with fresh_uploadd(b.dir / "limit", b.registry, "[daemon]\ntransfers = 4\n") as daemon:
        daemon.ctl("limit", f"{rate_mib}M", check="uploadctl limit")
        raw, failed = b.alternate([("uploadd", one(daemon))])
    why = failed.get("uploadd")
    title = (f"4 files of {human_size(size)} at once, PUT to nginx, under `uploadctl limit {rate_mib}M` "
             "(one limit for all transfers)")
    return {"title": title, "raw": raw, "rows": [
        row("all four together, over the limit (add to the last byte acknowledged)", "×",
            values(raw["uploadd"], "of_limit"), target="within 5% of the limit",
            check=("between", 0.95, 1.05), not_run=why),
    ]}
