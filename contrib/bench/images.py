"""Scenario 11, image preparation: photos of 12 megapixels (JPEG, quality 95) made into JPEGs of
at most 2048 pixels at quality 75, by uploadd (its uploadd-image helper, as many at once as the
machine has CPUs, then a copy to file://) against vipsthumbnail and ImageMagick's mogrify."""

import json
import os
import shutil
import subprocess

import measure
from benchenv import log
from context import Bench, row, values
from daemon import fresh_uploadd

WIDTH, HEIGHT = 4000, 3000
DISTINCT = 10  # photos made; the rest are copies of them (libvips and libjpeg cache nothing between files)


def make_photos(b: Bench, count: int) -> list:
    """`count` noisy 12-megapixel JPEGs at quality 95 in tmpfs, made once per run of the suite."""
    folder = b.shm / "photos"
    photos = sorted(folder.glob("photo-*.jpg")) if folder.exists() else []
    if len(photos) == count:
        return photos
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    work = b.shm / "photo-work"
    work.mkdir(exist_ok=True)
    for i in range(min(DISTINCT, count)):
        # Noise at a photo's contrast, on a gradient: 4-6 MB at quality 95, as a phone's are.
        steps = [["gaussnoise", f"{work}/n.v", str(WIDTH), str(HEIGHT), "--mean", "0", "--sigma", str(12 + i)],
                 ["xyz", f"{work}/xy.v", str(WIDTH), str(HEIGHT)],
                 ["extract_band", f"{work}/xy.v", f"{work}/x.v", "0"],
                 ["linear", f"{work}/x.v", f"{work}/g.v", str(200 / WIDTH), str(20 + 3 * i)],
                 ["add", f"{work}/g.v", f"{work}/n.v", f"{work}/p.v"],
                 ["cast", f"{work}/p.v", f"{work}/c.v", "uchar"],
                 ["bandjoin", f"{work}/c.v {work}/c.v {work}/c.v", f"{work}/rgb.v"],
                 ["copy", f"{work}/rgb.v", f"{work}/srgb.v", "--interpretation", "srgb"],
                 ["copy", f"{work}/srgb.v", f"{folder}/photo-{i:03}.jpg[Q=95]"]]
        for step in steps:
            subprocess.run(["vips", *step], check=True, capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
    for i in range(DISTINCT, count):
        shutil.copyfile(folder / f"photo-{i % DISTINCT:03}.jpg", folder / f"photo-{i:03}.jpg")
    return sorted(folder.glob("photo-*.jpg"))


def image_prep(b: Bench) -> dict:
    count = b.size["photos"]
    photos = make_photos(b, count)
    total_in = sum(p.stat().st_size for p in photos)
    log(f"  {count} photos of {WIDTH}x{HEIGHT}, {total_in / count / 1e6:.1f} MB each")

    def out_dir(tag: str):
        folder = b.shm / "photo-out" / tag
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def check(folder, tag):
        made = list(folder.glob("*.jpg"))
        if len(made) != count:
            raise RuntimeError(f"{tag}: {len(made)} of {count} photos came out")
        return sum(p.stat().st_size for p in made)

    def peer(tag, argv):
        """A peer that makes every photo in one process: argv(folder) is its command line."""
        def one(i):
            folder = out_dir(f"{tag}-{i}")
            ran = measure.run(argv(folder))
            ran.check(tag)
            return {"wall": ran.wall, "photos_per_s": count / ran.wall, "cpu": ran.cpu, "rss_mib": ran.maxrss_mib,
                    "bytes_out": check(folder, tag)}
        return one

    vipsthumbnail = peer("vipsthumbnail", lambda folder: [
        "vipsthumbnail", "--size", "2048", "-o", f"{folder}/%s.jpg[Q=75]", *map(str, photos)])
    mogrify = peer("mogrify", lambda folder: [
        "mogrify", "-path", str(folder), "-resize", "2048x2048>", "-quality", "75", *map(str, photos)])

    def uploadd(i):
        folder = out_dir(f"uploadd-{i}")
        with fresh_uploadd(b.dir / "images", b.registry, "[daemon]\ntransfers = 4\n") as d:
            cpu = measure.CpuDelta(d.pid)
            children_before = measure.children_cpu_seconds(d.pid)
            with measure.RssSampler(d.pid) as rss:
                ran = d.ctl("add", *map(str, photos), "--to", f"file://{folder}/", "--snapshot", "none",
                            "--image", "max=2048,quality=75", "--wait", check="uploadctl add --wait")
            daemon_cpu = cpu.seconds()
            helpers_cpu = measure.children_cpu_seconds(d.pid) - children_before
            jobs = json.loads(d.ctl("--json", "list", check="uploadctl list").stdout)["jobs"]
        size = check(folder, "uploadd")
        helper_rss = [int(j["prepared"]["details"].get("helper_max_rss_kib", 0)) / 1024 for j in jobs if j.get("prepared")]
        return {"wall": ran.wall, "photos_per_s": count / ran.wall, "cpu": ran.cpu + daemon_cpu + helpers_cpu,
                "daemon_cpu": daemon_cpu, "helpers_cpu": helpers_cpu, "rss_mib": max(helper_rss, default=0),
                "daemon_rss_mib": rss.peak_mib, "bytes_out": size}

    contenders = [("vipsthumbnail", vipsthumbnail), ("uploadd", uploadd)]
    if shutil.which("mogrify"):
        contenders.append(("mogrify", mogrify))
    raw, failed = b.alternate(contenders)
    failed.setdefault("mogrify", None if shutil.which("mogrify") else "ImageMagick is not installed")
    raw.setdefault("mogrify", [])
    mine = {"not_run": failed.get("uploadd")}
    vips, magick = "vipsthumbnail --size 2048", "mogrify -resize 2048x2048> -quality 75"
    return {"title": f"{count} photos of 12 MP (JPEG q95) to max=2048,quality=75", "raw": raw, "rows": [
        row("photos/s", "photos/s", values(raw["uploadd"], "photos_per_s"), peer=vips,
            peer_values=values(raw["vipsthumbnail"], "photos_per_s"), target="≥ 1.0× vipsthumbnail",
            check=("ratio", ">=", 1.0), peer_not_run=failed.get("vipsthumbnail"), **mine),
        row("photos/s", "photos/s", values(raw["uploadd"], "photos_per_s"), peer=magick,
            peer_values=values(raw["mogrify"], "photos_per_s"), target="≥ 3× ImageMagick",
            check=("ratio", ">=", 3.0), peer_not_run=failed.get("mogrify"), **mine),
        row("CPU (uploadctl + daemon + helpers)", "s", values(raw["uploadd"], "cpu"), peer=vips,
            peer_values=values(raw["vipsthumbnail"], "cpu"), peer_not_run=failed.get("vipsthumbnail"), **mine),
        row("CPU", "s", values(raw["uploadd"], "cpu"), peer=magick, peer_values=values(raw["mogrify"], "cpu"),
            peer_not_run=failed.get("mogrify"), **mine),
        row("peak RSS of a helper (vs the peer's process)", "MiB", values(raw["uploadd"], "rss_mib"), peer=vips,
            peer_values=values(raw["vipsthumbnail"], "rss_mib"), peer_not_run=failed.get("vipsthumbnail"), **mine),
        row("peak RSS (vs the peer's process)", "MiB", values(raw["uploadd"], "rss_mib"), peer=magick,
            peer_values=values(raw["mogrify"], "rss_mib"), peer_not_run=failed.get("mogrify"), **mine),
        row("daemon VmRSS during it", "MiB", values(raw["uploadd"], "daemon_rss_mib"), target="(informative)", **mine),
        row("bytes out, all photos", "B", values(raw["uploadd"], "bytes_out"), peer=vips,
            peer_values=values(raw["vipsthumbnail"], "bytes_out"), target="(informative)",
            peer_not_run=failed.get("vipsthumbnail"), **mine),
    ]}
