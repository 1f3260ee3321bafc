#!/usr/bin/env python3
"""Queue a folder's files with uploadd and follow them until they are done.

    python3 example_queue_folder.py FOLDER DEST [--socket PATH]

DEST is any uploadd destination ending in ``/``: ``file:///srv/backup/``,
``https://dav.example.org/uploads/``, ``s3://bucket/prefix/``, ``photos:``. The folder keeps its
name and sub-folders under DEST, as with ``uploadctl add FOLDER --to DEST``. Hidden files and
folders (names starting with ``.``) are skipped.

Prints a line when a job changes state, a progress line per running job at most once a second,
and a summary at the end. Exits 0 when every file completed, 1 when any failed, was canceled or
removed, or could not be queued, 69 when uploadd is not running.

Only the standard library and uploadd_client.py (next to this file) are needed.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import uploadd_client as ud  # noqa: E402


def walk(folder: Path):
    """Yields (path, folder relative to FOLDER's parent, lstat) for every regular file, hidden
    ones and symlinks left out. The lstat goes to uploadd with the path: if another user renames a
    symlink to one of your private files over a file after this check, uploadd refuses it."""
    top = folder.name
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        relative = os.path.relpath(root, folder)
        sub = top if relative == "." else f"{top}/{relative}"
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = os.path.join(root, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                yield path, sub, info


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def main() -> int:
    parser = argparse.ArgumentParser(description="Queue a folder with uploadd and show its progress.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("destination", help="where to, ending in / (file:///dir/, https://host/dir/, REMOTE:)")
    parser.add_argument("--socket", help="uploadd's control socket (default: as uploadctl finds it)")
    args = parser.parse_args()
    folder = args.folder.resolve()
    if not folder.is_dir():
        parser.error(f"{args.folder} is not a folder")
    destination = args.destination if args.destination.endswith(("/", ":")) else args.destination + "/"

    started = time.monotonic()
    try:
        client = ud.Client(args.socket)
    except (ud.UploaddNotRunning, ud.UploaddUntrusted) as error:
        print(f"error: {error}", file=sys.stderr)
        return 69

    with client:
        found = {path: (sub, info) for path, sub, info in walk(folder)}
        jobs, errors = client.add_many(found, lambda path: ud.join_destination(destination, found[path][0]),
                                       source_identity=lambda path: found[path][1])
        for error in errors:
            print(f"not queued: {error['source']}: {error['message']}", file=sys.stderr)
        if not jobs:
            print("nothing queued", file=sys.stderr)
            return 1
        batch = jobs[0]["batch"]
        total = len(jobs)
        print(f"queued {total} files as batch {batch} (to {destination})")
        names = {j["id"]: os.path.relpath(j["source"], folder.parent) for j in jobs}

        latest: dict[int, dict] = {}
        removed: set[int] = set()
        last_progress: dict[int, float] = {}
        printed: dict[int, str] = {}

        def report(job: dict) -> None:
            """A line when a job is in a state not yet shown."""
            if printed.get(job["id"]) == job["state"]:
                return
            printed[job["id"]] = job["state"]
            done = sum(1 for j in latest.values() if j["state"] in ud.TERMINAL_STATES)
            line = f"[{done:>{len(str(total))}}/{total}] {job['state']:<9} {names.get(job['id'], job['source'])}"
            if job["state"] == "failed" and job.get("error"):
                line += f": {job['error']['message']}"
            print(line, flush=True)
        while True:
            try:
                # The snapshot gives what happened before subscribing (and after a resubscription).
                with client.events(batch=batch, snapshot=True) as events:
                    for job in sorted(events.snapshot or [], key=lambda j: j["id"]):
                        latest[job["id"]] = job
                        report(job)
                    removed.update(i for i in names if i not in {j["id"] for j in events.snapshot or []})
                    if finished(latest, removed, names):
                        break
                    for event in events:
                        if event.from_snapshot:
                            continue
                        if event.kind == "job.removed":
                            removed.add(event.id)
                            print(f"removed    {names.get(event.id, event.id)}")
                        elif event.kind == "job.state":
                            latest[event.id] = event.params
                            report(event.params)
                        elif event.kind == "job.progress":
                            p = event.params
                            now = time.monotonic()
                            if now - last_progress.get(p["id"], 0) >= 1 and p.get("bytes_total"):
                                last_progress[p["id"]] = now
                                percent = 100 * p["bytes_sent"] / p["bytes_total"]
                                print(f"           {percent:5.1f}% {size(p.get('speed') or 0)}/s "
                                      f"{names.get(p['id'], p['id'])}", flush=True)
                        if finished(latest, removed, names):
                            break
                break
            except ud.SubscriptionOverflow:
                print("(fell behind the events; catching up)", file=sys.stderr)
                continue

    ended = [latest[i] for i in names if i in latest and i not in removed]
    by_state: dict[str, int] = {}
    for job in ended:
        by_state[job["state"]] = by_state.get(job["state"], 0) + 1
    sent = sum(j.get("bytes_total", 0) for j in ended if j["state"] == "completed")
    elapsed = time.monotonic() - started
    print(f"\n{total} files in {elapsed:.1f} s: " + ", ".join(f"{n} {state}" for state, n in sorted(by_state.items()))
          + (f", {len(removed & set(names))} removed" if removed & set(names) else "")
          + (f", {len(errors)} not queued" if errors else "")
          + f"; {size(sent)} uploaded", flush=True)
    for job in ended:
        if job["state"] == "failed":
            print(f"failed: {names[job['id']]}: {(job.get('error') or {}).get('message', '')}", file=sys.stderr)
    ok = not errors and not (removed & set(names)) and all(j["state"] == "completed" for j in ended)
    return 0 if ok else 1


def finished(latest: dict, removed: set, names: dict) -> bool:
    return all(i in removed or latest.get(i, {}).get("state") in ud.TERMINAL_STATES for i in names)


if __name__ == "__main__":
    sys.exit(main())
