#!/usr/bin/python3
"""lossyfs: a FUSE file system that forgets, on command, what a power cut may forget.

Power-loss tests run a program (uploadd) with its state and cache directories on this file
system, SIGKILL it at random moments, "cut the power", remount and start it again, and check
that everything it acknowledged survived. lossyfs passes everything through to a backing
directory and keeps in memory what a real file system would not yet have on disk:

  * every write (and truncate) made to a file since that file's last fsync/fdatasync;
  * every create, mkdir, mknod, symlink, link, unlink, rmdir and rename made since its
    directory's last fsync (an fsync on a directory descriptor; FUSE calls it fsyncdir).

"cut" throws that pending state away -- all of it, or a seeded random subset of what a real
file system may lose -- writes what survives to the backing directory, unmounts and exits.
Mounting the same backing directory again shows the state after the power cut.

Install (Debian 12, as root; no pip package is needed):

    apt-get install -y --no-install-recommends fuse3 python3-pyfuse3

python3-pyfuse3 brings python3-trio and libfuse3-3; fuse3 brings fusermount3 (the unmount
fallback; as root the mount itself needs only /dev/fuse). pyfuse3 is built for Debian's
/usr/bin/python3: run under another interpreter that lacks it (pyenv, a venv), `mount`
re-executes itself with /usr/bin/python3. The other subcommands and the LossyFS class below
need only the standard library.

Command line
------------
    lossyfs.py mount BACKING MOUNTPOINT [--control SOCKET] [--seed N] [--mode all|random]
                     [--log FILE] [--keep-prob P] [--torn-prob P] [--size-prob P]
                     [--sector BYTES] [--allow-other] [--debug]
        Runs in the foreground until cut or unmounted. Once the control socket exists (it is
        created after the mount is up, atomically by a rename) the file system is ready; it
        also prints "lossyfs[PID]: mounted ..." to stderr. Without --seed a random seed is
        picked and printed, so a run can always be replayed.
    lossyfs.py cut --control SOCKET [--mode all|random] [--seed N]
        Power cut: drop pending state (the mount's --mode/--seed unless given), write the
        survivors to BACKING, unmount (lazily) and make the server exit; returns when that
        process is gone. Prints one line per dropped (and, in random mode, per kept) item.
    lossyfs.py sync --control SOCKET       make everything durable now, stay mounted
    lossyfs.py status --control SOCKET     one line: pid, mode, seed, pending counts
    lossyfs.py pending --control SOCKET    every pending item, one a line
    lossyfs.py unmount --control SOCKET    clean unmount: sync everything, unmount, exit
    lossyfs.py unmount MOUNTPOINT          force: lazy unmount (fusermount3 -u -z, umount -l),
                                           for a server that was SIGKILLed or is stuck

Control interface: a Unix stream socket (--control). A client sends one line (`status`,
`pending`, `sync`, `cut [all|random] [SEED]`, `unmount`) and reads the reply until EOF; the
reply's first line is `ok pid=... ...` or `error: ...`, the following lines are the log of what
was dropped or kept. A `cut` or `unmount` reply is sent after the backing directory holds the
final state and the mount point is detached, so the test may mount again right away (the
`cut` client and LossyFS.cut also wait until the server process has exited). Signals do the
same: SIGUSR1 = cut (mount's mode and seed), SIGTERM/SIGINT/SIGHUP = clean unmount. An
unmount from outside (umount, fusermount3 -u) is a clean unmount too: everything is synced.
SIGKILL of the lossyfs process itself is a power cut in mode `all` (the backing directory
always holds exactly the durable state), but leaves a dead mount: `unmount MOUNTPOINT`, or the
next `mount`, clears it.

Python: `LossyFS(backing, mountpoint, seed=..., mode=...)` starts, cuts, syncs and unmounts a
server from a test (see the class below; it is what test_lossyfs.py uses).

The model
---------
The backing directory always holds the DURABLE state, the state a reboot after a power cut
would find (lossyfs never fsyncs the backing file system: only its own power cuts are
simulated). The process keeps the LIVE state that processes see: an in-memory namespace
(directory -> name -> inode) over it, and per file the list of writes/truncates since the last
fsync. Reads see the live state: the durable bytes with the pending writes laid over them.

Every inode has a durable object in the hidden directory BACKING/.lossyfs-store (invisible
through the mount): a file, symlink or special file there is a hard link of the same backing
inode as its durable names in the tree, so data made durable by fsync shows at every durable
name, and a file whose names are not durable (created, or unlinked, without a directory fsync)
still has somewhere to keep its durable data. A directory lives either at its durable place in
the tree or, while it has none, in the store. The store is removed at cut and at every mount
(it holds only inodes that no durable name reaches: what fsck would free).

  * fsync/fdatasync of a file applies its pending writes and truncates to its backing inode.
    It does NOT make the file's name durable (POSIX; stricter than ext4, where a file fsync
    commits the journal and with it the name): a file created and fsynced vanishes at a cut
    unless its directory was fsynced too.
  * fsync of a directory makes durable every pending namespace operation whose directories
    have all been fsynced since: a rename across directories needs an fsync of both. An
    operation made durable also makes durable the earlier pending operations on the same
    directory entries (rename a->b needs the create of a), and a directory's move makes the
    earlier moves of directories durable (as a journal would: else a subset of moves could put
    a directory inside itself). So the durable namespace is always one the operations could
    have produced in an order a journal allows.
  * Nothing else is durable: sync(2), syncfs, close and unmount-by-kill make nothing durable.
    A clean unmount (umount, `unmount`, SIGTERM) syncs everything, like a real one.
  * Metadata other than names and sizes (chmod, chown, utimes) goes straight to the backing
    directory: it is never lost.

The cut, mode `all`: every pending write, truncate and namespace operation is dropped. Files
keep their content as of their last fsync, directories their entries as of their last fsync.

The cut, mode `random` (seeded with random.Random(seed); the same pending state and the same
seed give the same survivors), what a real file system with data=writeback ordering may do:
  * each pending write of each file is kept (--keep-prob, 0.5), torn (--torn-prob, 0.15) or
    dropped, independently: a later write can survive an earlier one. A torn write keeps a
    random part: a random subset of its --sector (512) byte sectors when it spans several,
    else a random prefix (cut at any byte -- stronger than real disks, on purpose);
  * each pending truncate is kept or dropped (--keep-prob);
  * the file's size is then either what the kept operations give, or (--size-prob, 0.5) the
    size the live file had: the size (metadata) became durable but the data did not, and the
    unwritten part reads as zeros -- ext4 data=writeback's "file full of zeros";
  * each pending namespace operation is kept with --keep-prob, plus the earlier ones it needs
    (same entries; earlier directory moves), independently of the data: a rename can survive
    while the renamed file's unsynced data is lost (write temp, rename over target, dir fsync,
    no file fsync: the target may come back empty, short or zero-filled).
Every dropped item is logged, one line each ("drop write /state/journal off=4096 len=93"), and
in random mode every kept and torn one too, to stderr, to --log FILE and in the cut reply.

Limits
------
  * Data loss is per write request. The kernel splits a write(2) larger than 128 KiB into
    several requests, which then can be lost independently (a torn write(2), fine).
  * Durability of attributes (mode, owner, times) and of xattrs (not supported: ENOTSUP) is not
    modelled; mtime/ctime are reported from memory while data is pending.
  * flock(2) and fcntl locks are handled by the kernel (lossyfs implements neither, so FUSE
    keeps them local to this machine, which is all a single-host daemon needs); a killed
    process's locks go with it. O_TMPFILE and fallocate are not offered (EOPNOTSUPP; glibc's
    posix_fallocate falls back to writes). copy_file_range works inside the mount (the kernel
    falls back to reads and writes through lossyfs) and fails with EXDEV from another file
    system, which uploadd's FileCopy handles.
  * Writes through a shared writable mmap reach lossyfs only when the kernel writes the pages
    back (msync, fsync, munmap): until then they are not even pending.
  * One lossyfs per backing directory (an flock on it); the backing directory must support
    hard links (ext4, xfs, btrfs, tmpfs). Entries the backing directory holds at mount are
    read lazily, the first time their directory is looked at.
  * Pending state lives in memory until fsync or cut; a program that writes gigabytes without
    fsync needs that much memory. Reading a file costs O(its pending writes). Namespace
    operations in a directory that is never fsynced stay pending until the cut, and so do the
    inodes they name (a temp file created, fsynced and unlinked keeps its data in the store).
  * POSIX strictness has a consequence for the program under test: a directory it creates
    (mkdir -p of a state directory) survives a cut only if the directory holding it is
    fsynced. A test that does not want to test that creates those directories in the backing
    directory before mounting.
  * Run as root (CI does). It works as another user for files that user may read and write
    in the backing directory, with fusermount3 for the unmount.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import fcntl
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import traceback

STORE_NAME = b".lossyfs-store"
ROOT_INO = 1  # pyfuse3.ROOT_INODE
DEBIAN_PYTHON = "/usr/bin/python3"
THIS_FILE = os.path.abspath(__file__)
NAME_MAX = 255
CACHE_TIMEOUT = 1.0  # seconds the kernel may cache entries and attributes

# Node kinds.
DIR, FILE, LINK, OTHER = "dir", "file", "symlink", "special"
# Pending data operations of a file: (WRITE, offset, bytes) and (TRUNCATE, size).
WRITE, TRUNCATE = 0, 1


class LossyError(Exception):
    """A control command failed, or a server did not start."""


# ------------------------------------------------------------------------------------------
# Client side: control socket, forced unmount, and a helper class for tests. Standard library
# only, so that any python3 can drive a server.


def control(path: str, command: str, timeout: float = 60.0) -> list[str]:
    """Sends one command line to the server at control socket `path`; returns the reply lines
    after the first (`ok ...`) one, or raises LossyError with the server's error."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(command.strip().encode() + b"\n")
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    lines = b"".join(chunks).decode(errors="replace").splitlines()
    if not lines or not lines[0].startswith("ok"):
        raise LossyError(f"lossyfs {command!r}: " + ("\n".join(lines) or "no reply (server gone?)"))
    return lines


def _reply_fields(first_line: str) -> dict[str, str]:
    return dict(word.split("=", 1) for word in first_line.split()[1:] if "=" in word)


def _process_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            # The state follows the command name in parentheses; a zombie has exited.
            return handle.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


def wait_pid_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while not _process_gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def force_unmount(mountpoint: str) -> bool:
    """Lazily unmounts `mountpoint` whatever state its server is in (dead, stuck, gone).
    True when something was unmounted."""
    for argv in (["fusermount3", "-u", "-z", mountpoint], ["umount", "-l", mountpoint]):
        try:
            if subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=30).returncode == 0:
                return True
        except (OSError, subprocess.TimeoutExpired):
            pass
    return False


def _is_dead_mount(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as error:
        return error.errno in (errno.ENOTCONN, errno.ECONNABORTED)
    return False


class LossyFS:
    """A lossyfs server for a test: start() mounts BACKING on MOUNTPOINT, cut() cuts the power
    (and the server exits), start() again remounts. Its stderr goes to `log_path`."""

    def __init__(self, backing: str, mountpoint: str, *, seed: int = 0, mode: str = "all",
                 control_path: str | None = None, log_path: str | None = None,
                 extra_args: tuple[str, ...] = ()):
        self.backing, self.mountpoint = backing, mountpoint
        self.seed, self.mode, self.extra_args = seed, mode, tuple(extra_args)
        # A Unix socket path has at most 107 bytes: keep it short, in /tmp.
        self.control_path = control_path or os.path.join(
            tempfile.gettempdir(), f"lossyfs-{os.getpid()}-{id(self) & 0xffffff:x}.sock")
        self.log_path = log_path or self.control_path[:-5] + ".log"
        self.proc: subprocess.Popen | None = None
        self.last_cut: list[str] = []

    def start(self, timeout: float = 30.0) -> "LossyFS":
        if self.proc is not None and self.proc.poll() is None:
            raise LossyError("lossyfs: already running")
        try:
            os.unlink(self.control_path)
        except FileNotFoundError:
            pass
        argv = [sys.executable, THIS_FILE, "mount", self.backing, self.mountpoint,
                "--control", self.control_path, "--seed", str(self.seed), "--mode", self.mode,
                *self.extra_args]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise LossyError(f"lossyfs exited with {self.proc.returncode}:\n{self.log_tail()}")
            if os.path.exists(self.control_path):
                try:
                    control(self.control_path, "status", timeout=5)
                    return self
                except (OSError, LossyError):
                    pass
            if time.monotonic() > deadline:
                self.kill()
                raise LossyError(f"lossyfs did not come up in {timeout} s:\n{self.log_tail()}")
            time.sleep(0.02)

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path, errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError:
            return ""

    def command(self, command: str, timeout: float = 60.0) -> list[str]:
        return control(self.control_path, command, timeout)

    def status(self) -> dict[str, str]:
        return _reply_fields(self.command("status")[0])

    def sync(self) -> list[str]:
        return self.command("sync")[1:]

    def _stop(self, command: str) -> list[str]:
        lines = self.command(command)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None
        return lines[1:]

    def cut(self, mode: str | None = None, seed: int | None = None) -> list[str]:
        """Power cut; returns the log lines (what was dropped, torn, kept). The server exits."""
        words = ["cut", mode or self.mode] + ([str(seed)] if seed is not None else [])
        self.last_cut = self._stop(" ".join(words))
        return self.last_cut

    def unmount(self) -> None:
        """Clean unmount: everything pending becomes durable."""
        self._stop("unmount")

    def kill(self) -> None:
        """SIGKILL the server (a cut in mode all, without the log) and clear the dead mount."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None
        force_unmount(self.mountpoint)

    def close(self) -> None:
        """Unmounts if still mounted (cleanly when possible)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.unmount()
            except (OSError, LossyError):
                self.kill()
        elif _is_dead_mount(self.mountpoint):
            force_unmount(self.mountpoint)
        self.proc = None

    def __enter__(self) -> "LossyFS":
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.close()


# ------------------------------------------------------------------------------------------
# The model: durable state in the backing directory, live state in memory. No FUSE in here;
# errors are FsError(errno).


class FsError(Exception):
    def __init__(self, code: int):
        super().__init__(code, os.strerror(code))
        self.errno = code


class Node:
    __slots__ = ("ino", "kind", "lookups", "opens", "nlink", "dlinks", "dparent", "op_refs",
                 "entries", "subdirs", "size", "pending", "pending_bytes", "fd", "mtime_ns",
                 "ctime_ns", "hint", "lower_ino", "parent")

    def __init__(self, ino: int, kind: str):
        self.ino, self.kind = ino, kind
        self.lookups = 0      # the kernel's lookup count (FUSE forget)
        self.opens = 0        # open handles
        self.nlink = 0        # live names
        self.dlinks = 0       # durable names in the tree (files)
        self.dparent = None   # durable (parent ino, name) of a directory; None: in the store
        self.op_refs = 0      # pending namespace operations that mention this inode
        self.entries = None   # live directory entries {name: ino}; None until loaded
        self.subdirs = 0      # live subdirectories (for st_nlink)
        self.size = 0         # live size (files)
        self.pending = []     # pending data operations (files)
        self.pending_bytes = 0
        self.fd = None        # descriptor of the backing inode (files), opened lazily
        self.mtime_ns = None  # live times while they differ from the backing inode's
        self.ctime_ns = None
        self.hint = ""        # a live path, for logs
        self.lower_ino = None  # st_ino of the backing inode (not directories)
        self.parent = None     # live parent ino (directories), for ".."


class NsOp:
    """A pending namespace operation. `effects` are (dir ino, name, old ino|None, new ino|None):
    absolute changes of directory entries, so that any subset closed under `deps` applies."""
    __slots__ = ("seq", "kind", "effects", "waiting", "deps", "desc")

    def __init__(self, seq, kind, effects, desc):
        self.seq, self.kind, self.effects, self.desc = seq, kind, effects, desc
        self.waiting = {effect[0] for effect in effects}  # directories still to be fsynced
        self.deps = set()  # earlier pending ops on the same entries


class Handle:
    __slots__ = ("node", "snapshot")

    def __init__(self, node):
        self.node, self.snapshot = node, None


class Model:
    def __init__(self, backing: str, log, keep_prob=0.5, torn_prob=0.15, size_prob=0.5,
                 sector=512):
        self.backing = os.fsencode(os.path.abspath(backing))
        self.store = os.path.join(self.backing, STORE_NAME)
        self.log = log
        self.keep_prob, self.torn_prob, self.size_prob = keep_prob, torn_prob, size_prob
        self.sector = max(1, sector)
        if os.path.lexists(self.store):
            # Left by a lossyfs that was killed: inodes no durable name reaches. Gone.
            shutil.rmtree(self.store)
        os.mkdir(self.store, 0o700)
        root = Node(ROOT_INO, DIR)
        root.nlink = 1
        self.nodes: dict[int, Node] = {ROOT_INO: root}
        self.next_ino = ROOT_INO + 1
        self.by_lower: dict[int, int] = {}
        self.ops: dict[int, NsOp] = {}  # pending namespace ops by seq (insertion = seq order)
        self.dir_ops: dict[int, set[int]] = {}
        self.last_on_key: dict[tuple[int, bytes], int] = {}
        self.last_dir_move = 0  # the latest rename/exchange that moved a directory
        self.seq = 0
        self.dirty: dict[int, Node] = {}  # files with pending data, in order of first write
        self.handles: dict[int, Handle] = {}
        self.next_fh = 1
        self.dead = False  # after cut/unmount: every request fails with EIO
        self.finished = False

    # ---- locations in the backing directory

    def store_path(self, ino: int) -> bytes:
        return os.path.join(self.store, b"%d" % ino)

    def loc(self, node: Node) -> bytes:
        """Where a directory is in the backing directory (its durable place, or the store)."""
        if node.ino == ROOT_INO:
            return self.backing
        if node.dparent is None:
            return self.store_path(node.ino)
        parent, name = node.dparent
        return os.path.join(self.loc(self.nodes[parent]), name)

    def lower_path(self, node: Node) -> bytes:
        return self.loc(node) if node.kind == DIR else self.store_path(node.ino)

    # ---- nodes

    def _new_node(self, kind: str) -> Node:
        node = Node(self.next_ino, kind)
        self.next_ino += 1
        self.nodes[node.ino] = node
        return node

    @staticmethod
    def _kind(mode: int) -> str:
        if stat.S_ISDIR(mode):
            return DIR
        if stat.S_ISREG(mode):
            return FILE
        if stat.S_ISLNK(mode):
            return LINK
        return OTHER

    def node(self, ino: int) -> Node:
        node = self.nodes.get(ino)
        if node is None:
            raise FsError(errno.ESTALE)
        return node

    def _dir(self, ino: int) -> Node:
        node = self.node(ino)
        if node.kind != DIR:
            raise FsError(errno.ENOTDIR)
        return node

    def entries(self, directory: Node) -> dict[bytes, int]:
        if directory.entries is None:
            self._load(directory)
        return directory.entries

    def _load(self, directory: Node) -> None:
        """Reads a directory's entries from the backing directory, the first time it is used
        (its live entries are its durable ones until then)."""
        path = self.loc(directory)
        with os.scandir(path) as scan:
            names = sorted(entry.name for entry in scan)
        entries = {}
        for name in names:
            if directory.ino == ROOT_INO and name == STORE_NAME:
                continue
            child_path = os.path.join(path, name)
            st = os.lstat(child_path)
            kind = self._kind(st.st_mode)
            if kind == DIR:
                node = self._new_node(DIR)
                node.dparent = (directory.ino, name)
                node.parent = directory.ino
                node.nlink = 1
                directory.subdirs += 1
            elif st.st_ino in self.by_lower:
                node = self.nodes[self.by_lower[st.st_ino]]  # another name of a known file
            else:
                node = self._new_node(kind)
                os.link(child_path, self.store_path(node.ino), follow_symlinks=False)
                node.lower_ino = st.st_ino
                node.nlink = node.dlinks = st.st_nlink
                node.size = st.st_size
                self.by_lower[st.st_ino] = node.ino
            node.hint = directory.hint + "/" + os.fsdecode(name)
            entries[name] = node.ino
        directory.entries = entries

    def _try_free(self, node: Node | None) -> None:
        """Forgets an inode nothing refers to any more: not the kernel, no handle, no live or
        durable name, no pending operation."""
        if (node is None or node.ino == ROOT_INO or node.lookups > 0 or node.opens > 0
                or node.nlink > 0 or node.op_refs > 0 or self.nodes.get(node.ino) is not node):
            return
        if node.kind == DIR:
            if node.dparent is not None:
                return
            path = self.store_path(node.ino)
            try:
                os.rmdir(path)
            except FileNotFoundError:
                pass
            except OSError:
                shutil.rmtree(path, ignore_errors=True)
        else:
            if node.dlinks > 0:
                return
            if node.fd is not None:
                os.close(node.fd)
                node.fd = None
            try:
                os.unlink(self.store_path(node.ino))
            except FileNotFoundError:
                pass
            self.by_lower.pop(node.lower_ino, None)
            self.dirty.pop(node.ino, None)
            node.pending = []
        del self.nodes[node.ino]

    def forget(self, ino: int, count: int) -> None:
        node = self.nodes.get(ino)
        if node is not None:
            node.lookups = max(0, node.lookups - count)
            if not self.dead:
                self._try_free(node)

    # ---- attributes

    def stat(self, node: Node) -> dict:
        if node.fd is not None:
            st = os.fstat(node.fd)
        else:
            st = os.lstat(self.lower_path(node))
        if node.kind == FILE:
            size = node.size
        else:
            size = st.st_size
        if node.kind == DIR:
            nlink = 2 + (node.subdirs if node.entries is not None else max(0, st.st_nlink - 2))
        else:
            nlink = node.nlink
        return {
            "st_ino": node.ino, "st_mode": st.st_mode, "st_nlink": nlink, "st_uid": st.st_uid,
            "st_gid": st.st_gid, "st_rdev": st.st_rdev, "st_size": size, "st_blksize": 4096,
            "st_blocks": (size + 511) // 512 if node.kind == FILE else st.st_blocks,
            "st_atime_ns": st.st_atime_ns,
            "st_mtime_ns": node.mtime_ns if node.mtime_ns is not None else st.st_mtime_ns,
            "st_ctime_ns": node.ctime_ns if node.ctime_ns is not None else st.st_ctime_ns,
        }

    def setattr(self, node: Node, size=None, mode=None, uid=None, gid=None, atime_ns=None,
                mtime_ns=None) -> None:
        now = time.time_ns()
        if size is not None:
            if node.kind == DIR:
                raise FsError(errno.EISDIR)
            if node.kind != FILE:
                raise FsError(errno.EINVAL)
            self._truncate(node, size)
        path = self.lower_path(node)
        if mode is not None and node.kind != LINK:
            os.chmod(path, stat.S_IMODE(mode))
        if uid is not None or gid is not None:
            os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid,
                     follow_symlinks=False)
        if atime_ns is not None or mtime_ns is not None:
            st = os.lstat(path)
            times = (st.st_atime_ns if atime_ns is None else atime_ns,
                     (node.mtime_ns or st.st_mtime_ns) if mtime_ns is None else mtime_ns)
            os.utime(path, ns=times, follow_symlinks=False)
            if mtime_ns is not None:
                node.mtime_ns = mtime_ns
        node.ctime_ns = now

    def readlink(self, node: Node) -> bytes:
        if node.kind != LINK:
            raise FsError(errno.EINVAL)
        return os.readlink(self.store_path(node.ino))

    def statfs(self) -> os.statvfs_result:
        return os.statvfs(self.backing)

    # ---- the namespace

    def _check_new_name(self, directory: Node, name: bytes) -> None:
        if len(name) > NAME_MAX:
            raise FsError(errno.ENAMETOOLONG)
        if directory.ino == ROOT_INO and name == STORE_NAME:
            raise FsError(errno.EACCES)

    def _set_entry(self, directory: Node, name: bytes, node: Node) -> None:
        self.entries(directory)[name] = node.ino
        node.nlink += 1
        if node.kind == DIR:
            directory.subdirs += 1
            node.parent = directory.ino
        directory.mtime_ns = directory.ctime_ns = node.ctime_ns = time.time_ns()

    def _del_entry(self, directory: Node, name: bytes) -> Node:
        node = self.nodes[self.entries(directory).pop(name)]
        node.nlink -= 1
        if node.kind == DIR:
            directory.subdirs -= 1
        directory.mtime_ns = directory.ctime_ns = node.ctime_ns = time.time_ns()
        return node

    def _record(self, kind: str, effects: list, desc: str, moves_dir: bool = False) -> None:
        self.seq += 1
        op = NsOp(self.seq, kind, effects, desc)
        if moves_dir:
            # Directory moves stay in their order (a journal would): kept ones are always a
            # prefix of them, so the durable tree is one the live tree was, without cycles.
            if self.last_dir_move in self.ops:
                op.deps.add(self.last_dir_move)
            self.last_dir_move = op.seq
        for d, name, old, new in effects:
            prev = self.last_on_key.get((d, name))
            if prev is not None and prev in self.ops:
                op.deps.add(prev)
            self.last_on_key[(d, name)] = op.seq
            for ino in (d, old, new):
                if ino is not None:
                    self.nodes[ino].op_refs += 1
        for d in op.waiting:
            self.dir_ops.setdefault(d, set()).add(op.seq)
        self.ops[op.seq] = op

    def lookup(self, parent_ino: int, name: bytes) -> Node:
        directory = self._dir(parent_ino)
        if directory.ino == ROOT_INO and name == STORE_NAME:
            raise FsError(errno.ENOENT)
        ino = self.entries(directory).get(name)
        if ino is None:
            raise FsError(errno.ENOENT)
        node = self.nodes[ino]
        node.lookups += 1
        return node

    def _chown_new(self, path: bytes, uid: int, gid: int) -> None:
        if uid != os.geteuid() or gid != os.getegid():
            os.chown(path, uid, gid, follow_symlinks=False)

    def create(self, parent_ino: int, name: bytes, mode: int, flags: int, uid: int,
               gid: int) -> tuple[int, Node]:
        directory = self._dir(parent_ino)
        self._check_new_name(directory, name)
        existing = self.entries(directory).get(name)
        if existing is not None:
            if flags & os.O_EXCL:
                raise FsError(errno.EEXIST)
            node = self.nodes[existing]
            fh = self.open(node, flags)
            node.lookups += 1
            return fh, node
        node = self._new_node(FILE)
        path = self.store_path(node.ino)
        node.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW,
                          stat.S_IMODE(mode))
        self._chown_new(path, uid, gid)
        node.lower_ino = os.fstat(node.fd).st_ino
        self.by_lower[node.lower_ino] = node.ino
        node.hint = directory.hint + "/" + os.fsdecode(name)
        self._set_entry(directory, name, node)
        self._record("create", [(directory.ino, name, None, node.ino)], f"create {node.hint}")
        node.lookups += 1
        node.opens += 1
        fh = self._new_handle(node)
        return fh, node

    def mkdir(self, parent_ino: int, name: bytes, mode: int, uid: int, gid: int) -> Node:
        directory = self._dir(parent_ino)
        self._check_new_name(directory, name)
        if name in self.entries(directory):
            raise FsError(errno.EEXIST)
        node = self._new_node(DIR)
        path = self.store_path(node.ino)
        os.mkdir(path, stat.S_IMODE(mode))
        self._chown_new(path, uid, gid)
        node.entries = {}
        node.hint = directory.hint + "/" + os.fsdecode(name)
        self._set_entry(directory, name, node)
        self._record("mkdir", [(directory.ino, name, None, node.ino)], f"mkdir {node.hint}")
        node.lookups += 1
        return node

    def _new_special(self, directory: Node, name: bytes, make, kind_desc: str, uid: int,
                     gid: int) -> Node:
        self._check_new_name(directory, name)
        if name in self.entries(directory):
            raise FsError(errno.EEXIST)
        ino = self.next_ino
        path = self.store_path(ino)
        make(path)
        st = os.lstat(path)
        node = self._new_node(self._kind(st.st_mode))
        assert node.ino == ino
        self._chown_new(path, uid, gid)
        node.lower_ino = st.st_ino
        node.size = st.st_size
        self.by_lower[st.st_ino] = node.ino
        node.hint = directory.hint + "/" + os.fsdecode(name)
        self._set_entry(directory, name, node)
        self._record(kind_desc, [(directory.ino, name, None, node.ino)], f"{kind_desc} {node.hint}")
        node.lookups += 1
        return node

    def symlink(self, parent_ino: int, name: bytes, target: bytes, uid: int, gid: int) -> Node:
        return self._new_special(self._dir(parent_ino), name,
                                 lambda path: os.symlink(target, path), "symlink", uid, gid)

    def mknod(self, parent_ino: int, name: bytes, mode: int, rdev: int, uid: int, gid: int) -> Node:
        return self._new_special(self._dir(parent_ino), name,
                                 lambda path: os.mknod(path, mode, rdev), "mknod", uid, gid)

    def link(self, ino: int, parent_ino: int, name: bytes) -> Node:
        node = self.node(ino)
        directory = self._dir(parent_ino)
        if node.kind == DIR:
            raise FsError(errno.EPERM)
        self._check_new_name(directory, name)
        if name in self.entries(directory):
            raise FsError(errno.EEXIST)
        if node.nlink == 0:
            raise FsError(errno.ENOENT)  # linkat of an unlinked file (no AT_EMPTY_PATH magic)
        self._set_entry(directory, name, node)
        path = directory.hint + "/" + os.fsdecode(name)
        self._record("link", [(directory.ino, name, None, node.ino)], f"link {node.hint} -> {path}")
        node.lookups += 1
        return node

    def unlink(self, parent_ino: int, name: bytes) -> None:
        directory = self._dir(parent_ino)
        ino = self.entries(directory).get(name)
        if ino is None or (directory.ino == ROOT_INO and name == STORE_NAME):
            raise FsError(errno.ENOENT)
        if self.nodes[ino].kind == DIR:
            raise FsError(errno.EISDIR)
        node = self._del_entry(directory, name)
        path = directory.hint + "/" + os.fsdecode(name)
        self._record("unlink", [(directory.ino, name, ino, None)], f"unlink {path}")
        self._try_free(node)

    def rmdir(self, parent_ino: int, name: bytes) -> None:
        directory = self._dir(parent_ino)
        ino = self.entries(directory).get(name)
        if ino is None or (directory.ino == ROOT_INO and name == STORE_NAME):
            raise FsError(errno.ENOENT)
        node = self.nodes[ino]
        if node.kind != DIR:
            raise FsError(errno.ENOTDIR)
        if self.entries(node):
            raise FsError(errno.ENOTEMPTY)
        self._del_entry(directory, name)
        path = directory.hint + "/" + os.fsdecode(name)
        self._record("rmdir", [(directory.ino, name, ino, None)], f"rmdir {path}")
        self._try_free(node)

    RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2

    def rename(self, old_parent: int, old_name: bytes, new_parent: int, new_name: bytes,
               flags: int = 0) -> None:
        d1, d2 = self._dir(old_parent), self._dir(new_parent)
        e1, e2 = self.entries(d1), self.entries(d2)
        if d1.ino == ROOT_INO and old_name == STORE_NAME:
            raise FsError(errno.ENOENT)
        self._check_new_name(d2, new_name)
        src_ino = e1.get(old_name)
        if src_ino is None:
            raise FsError(errno.ENOENT)
        dst_ino = e2.get(new_name)
        src = self.nodes[src_ino]
        dst = self.nodes[dst_ino] if dst_ino is not None else None
        old_path = d1.hint + "/" + os.fsdecode(old_name)
        new_path = d2.hint + "/" + os.fsdecode(new_name)
        if flags & self.RENAME_EXCHANGE:
            if dst is None:
                raise FsError(errno.ENOENT)
            if src is dst:
                return
            e1[old_name], e2[new_name] = dst_ino, src_ino
            if d1 is not d2:
                if src.kind == DIR:
                    d1.subdirs -= 1
                    d2.subdirs += 1
                if dst.kind == DIR:
                    d2.subdirs -= 1
                    d1.subdirs += 1
            now = time.time_ns()
            for node in (d1, d2, src, dst):
                node.ctime_ns = now
            d1.mtime_ns = d2.mtime_ns = now
            src.hint, dst.hint = new_path, old_path
            if src.kind == DIR:
                src.parent = d2.ino
            if dst.kind == DIR:
                dst.parent = d1.ino
            self._record("exchange", [(d1.ino, old_name, src_ino, dst_ino),
                                      (d2.ino, new_name, dst_ino, src_ino)],
                         f"exchange {old_path} <-> {new_path}", moves_dir=DIR in (src.kind, dst.kind))
            return
        if dst is not None:
            if flags & self.RENAME_NOREPLACE:
                raise FsError(errno.EEXIST)
            if src is dst:
                return  # two names of one file: POSIX says do nothing
            if src.kind == DIR:
                if dst.kind != DIR:
                    raise FsError(errno.ENOTDIR)
                if self.entries(dst):
                    raise FsError(errno.ENOTEMPTY)
            elif dst.kind == DIR:
                raise FsError(errno.EISDIR)
            self._del_entry(d2, new_name)
        self._del_entry(d1, old_name)
        self._set_entry(d2, new_name, src)
        src.hint = new_path
        self._record("rename", [(d1.ino, old_name, src_ino, None), (d2.ino, new_name, dst_ino, src_ino)],
                     f"rename {old_path} -> {new_path}" + (" (replacing it)" if dst else ""),
                     moves_dir=src.kind == DIR)
        self._try_free(dst)

    # ---- handles and data

    def _new_handle(self, node: Node) -> int:
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = Handle(node)
        return fh

    def handle(self, fh: int) -> Handle:
        handle = self.handles.get(fh)
        if handle is None:
            raise FsError(errno.EBADF)
        return handle

    def _fd(self, node: Node) -> int:
        if node.fd is None:
            node.fd = os.open(self.store_path(node.ino), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        return node.fd

    def open(self, node: Node, flags: int) -> int:
        if node.kind == DIR:
            raise FsError(errno.EISDIR)
        if node.kind != FILE:
            raise FsError(errno.ENXIO)
        if flags & os.O_TRUNC and (flags & os.O_ACCMODE) != os.O_RDONLY and node.size != 0:
            self._truncate(node, 0)
        node.opens += 1
        return self._new_handle(node)

    def release(self, fh: int) -> None:
        handle = self.handles.pop(fh, None)
        if handle is None:
            return
        node = handle.node
        node.opens -= 1
        if node.opens == 0 and node.fd is not None and node.kind == FILE:
            os.close(node.fd)
            node.fd = None
        self._try_free(node)

    def _add_pending(self, node: Node, op: tuple) -> None:
        if not node.pending:
            self.dirty[node.ino] = node
        node.pending.append(op)
        node.mtime_ns = node.ctime_ns = time.time_ns()

    def write(self, node: Node, offset: int, data: bytes) -> int:
        if not data:
            return 0
        self._add_pending(node, (WRITE, offset, bytes(data)))
        node.pending_bytes += len(data)
        node.size = max(node.size, offset + len(data))
        return len(data)

    def _truncate(self, node: Node, size: int) -> None:
        if size < 0:
            raise FsError(errno.EINVAL)
        if size == node.size:
            return
        self._add_pending(node, (TRUNCATE, size))
        node.size = size

    def read(self, node: Node, offset: int, size: int) -> bytes:
        end = min(offset + size, node.size)
        if end <= offset:
            return b""
        length = end - offset
        buf = bytearray(os.pread(self._fd(node), length, offset))
        if len(buf) < length:
            buf.extend(bytes(length - len(buf)))
        for op in node.pending:
            if op[0] == WRITE:
                _, at, data = op
                lo, hi = max(at, offset), min(at + len(data), end)
                if lo < hi:
                    buf[lo - offset:hi - offset] = data[lo - at:hi - at]
            else:
                cut = op[1]
                if cut < end:
                    lo = max(cut, offset)
                    buf[lo - offset:] = bytes(end - lo)
        return bytes(buf)

    def _apply_data(self, node: Node, ops) -> None:
        fd = self._fd(node)
        for op in ops:
            if op[0] == WRITE:
                _, at, data = op
                view = memoryview(data)
                while view:
                    written = os.pwrite(fd, view, at)
                    view, at = view[written:], at + written
            else:
                os.ftruncate(fd, op[1])

    def fsync(self, node: Node) -> None:
        """fsync/fdatasync of a file: its data becomes durable (its name does not)."""
        if node.kind != FILE or not node.pending:
            return
        self._apply_data(node, node.pending)
        # fsync makes the inode's metadata durable with its data: the mtime processes saw is the
        # one the backing inode keeps (a program may record it, as uploadd does for its copies).
        if node.mtime_ns is not None:
            fd = self._fd(node)
            st = os.fstat(fd)
            os.utime(fd, ns=(st.st_atime_ns, node.mtime_ns))
            node.mtime_ns = None
        node.pending = []
        node.pending_bytes = 0
        self.dirty.pop(node.ino, None)
        if node.opens == 0 and node.fd is not None:  # synced by `sync`, not through a handle
            os.close(node.fd)
            node.fd = None

    def opendir(self, node: Node) -> int:
        if node.kind != DIR:
            raise FsError(errno.ENOTDIR)
        return self._new_handle(node)

    def releasedir(self, fh: int) -> None:
        self.handles.pop(fh, None)

    def dir_snapshot(self, node: Node) -> list[tuple[bytes, int]]:
        """The entries a readdir lists: "." and ".." first (the kernel takes no lookup
        reference for those two), then the live entries by name."""
        parent = node.parent if node.parent in self.nodes else node.ino
        return [(b".", node.ino), (b"..", parent)] + sorted(self.entries(node).items())

    def fsyncdir(self, node: Node) -> None:
        """fsync of a directory: the pending operations on its entries whose other directory
        (a rename's) was fsynced too become durable, with the earlier ones they need."""
        seqs = self.dir_ops.pop(node.ino, None)
        if not seqs:
            return
        forced = []
        for seq in seqs:
            op = self.ops[seq]
            op.waiting.discard(node.ino)
            if not op.waiting:
                forced.append(seq)
        if forced:
            for seq in self._closure(forced):
                self._retire(self.ops[seq], apply=True)

    def _closure(self, seqs) -> list[int]:
        selected = set(seqs)
        stack = list(seqs)
        while stack:
            for dep in self.ops[stack.pop()].deps:
                if dep in self.ops and dep not in selected:
                    selected.add(dep)
                    stack.append(dep)
        return sorted(selected)

    def _retire(self, op: NsOp, apply: bool) -> None:
        """Takes a pending op out of the log; applies it to the backing directory first if
        it is kept."""
        del self.ops[op.seq]
        if apply:
            try:
                self._apply_op(op)
            except OSError as error:
                self.log(f"lossyfs: error applying {op.desc}: {error}")
        for d in op.waiting:
            waiting = self.dir_ops.get(d)
            if waiting is not None:
                waiting.discard(op.seq)
                if not waiting:
                    del self.dir_ops[d]
        touched = []
        for d, name, old, new in op.effects:
            if self.last_on_key.get((d, name)) == op.seq:
                del self.last_on_key[(d, name)]
            for ino in (d, old, new):
                if ino is not None:
                    self.nodes[ino].op_refs -= 1
                    touched.append(self.nodes[ino])
        if not self.dead:
            for node in touched:
                self._try_free(node)

    def _apply_op(self, op: NsOp) -> None:
        for d, name, old, new in op.effects:
            if old is not None:
                self._unplace(d, name, old)
        for d, name, old, new in op.effects:
            if new is not None:
                self._place(d, name, new)

    def _unplace(self, dir_ino: int, name: bytes, ino: int) -> None:
        path = os.path.join(self.loc(self.nodes[dir_ino]), name)
        node = self.nodes[ino]
        if node.kind == DIR:
            if node.dparent == (dir_ino, name):
                os.rename(path, self.store_path(ino))
                node.dparent = None
            else:
                self.log(f"lossyfs: internal: {node.hint} is not durably at {os.fsdecode(path)}")
            return
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self.log(f"lossyfs: internal: no durable {os.fsdecode(path)} to remove")
            return
        if st.st_ino == node.lower_ino:
            os.unlink(path)
            node.dlinks -= 1
        else:
            self.log(f"lossyfs: internal: {os.fsdecode(path)} is not {node.hint}")

    def _place(self, dir_ino: int, name: bytes, ino: int) -> None:
        path = os.path.join(self.loc(self.nodes[dir_ino]), name)
        node = self.nodes[ino]
        if os.path.lexists(path):  # never expected: keep going, but say so
            self.log(f"lossyfs: internal: {os.fsdecode(path)} exists already; moved aside")
            aside = os.path.join(self.store, b"lost-%d" % self.seq)
            self.seq += 1
            for other in self.nodes.values():
                if other.kind == DIR and other.dparent == (dir_ino, name):
                    other.dparent = None
                    aside = self.store_path(other.ino)
            if os.path.isdir(path) and not os.path.islink(path):
                os.rename(path, aside)
            else:
                os.unlink(path)
        if node.kind == DIR:
            os.rename(self.loc(node), path)
            node.dparent = (dir_ino, name)
        else:
            os.link(self.store_path(ino), path, follow_symlinks=False)
            node.dlinks += 1

    # ---- power

    def counts(self) -> dict[str, int]:
        return {
            "pending_files": len(self.dirty),
            "pending_writes": sum(len(node.pending) for node in self.dirty.values()),
            "pending_bytes": sum(node.pending_bytes for node in self.dirty.values()),
            "pending_ops": len(self.ops),
            "inodes": len(self.nodes),
            "handles": len(self.handles),
        }

    def pending_lines(self) -> list[str]:
        lines = []
        for node in self.dirty.values():
            for op in node.pending:
                lines.append(self._data_desc(node, op))
        for op in self.ops.values():
            waiting = ", ".join(self.nodes[d].hint or "/" for d in sorted(op.waiting))
            lines.append(f"{op.desc} (waits for an fsync of {waiting})")
        return lines

    @staticmethod
    def _data_desc(node: Node, op: tuple) -> str:
        if op[0] == WRITE:
            return f"write {node.hint} off={op[1]} len={len(op[2])}"
        return f"truncate {node.hint} size={op[1]}"

    def sync_all(self) -> None:
        """Everything pending becomes durable (a clean unmount, or `sync`)."""
        for node in list(self.dirty.values()):
            self.fsync(node)
        for seq in list(self.ops):
            self._retire(self.ops[seq], apply=True)

    def cut(self, mode: str, seed: int) -> list[str]:
        """The power cut: drops pending state (all, or a random subset), writes the survivors
        to the backing directory. Returns the log lines. The model is dead afterwards."""
        if mode not in ("all", "random"):
            raise ValueError(f"unknown mode {mode!r}")
        self.dead = True
        rng = random.Random(seed)
        lines = [f"cut mode={mode} seed={seed} pending_files={len(self.dirty)} "
                 f"pending_ops={len(self.ops)}"]
        for node in list(self.dirty.values()):
            self._cut_data(node, mode, rng, lines)
        if mode == "all":
            kept = set()
        else:
            kept = set(self._closure([seq for seq in self.ops if rng.random() < self.keep_prob]))
        for seq in list(self.ops):
            op = self.ops[seq]
            lines.append(("keep " if seq in kept else "drop ") + op.desc)
            self._retire(op, apply=seq in kept)
        return lines

    def _cut_data(self, node: Node, mode: str, rng: random.Random, lines: list[str]) -> None:
        fd = self._fd(node)
        durable_size = os.fstat(fd).st_size
        kept = []
        for op in node.pending:
            desc = self._data_desc(node, op)
            if mode == "all":
                lines.append("drop " + desc)
                continue
            u = rng.random()
            if u < self.keep_prob:
                kept.append(op)
                lines.append("keep " + desc)
            elif op[0] == WRITE and u < self.keep_prob + self.torn_prob and len(op[2]) > 1:
                pieces = self._tear(op[1], op[2], rng)
                kept.extend(pieces)
                ranges = " ".join(f"[{at},{at + len(data)})" for _, at, data in pieces)
                lines.append(f"tear {desc}: kept {ranges}")
            else:
                lines.append("drop " + desc)
        natural = durable_size
        for op in kept:
            natural = max(natural, op[1] + len(op[2])) if op[0] == WRITE else op[1]
        final = natural
        if mode == "random" and natural != node.size and rng.random() < self.size_prob:
            final = node.size
            lines.append(f"size {node.hint} = {final}, the unsynced size (the kept data gives "
                         f"{natural}{'; the rest reads as zeros' if final > natural else ''})")
        self._apply_data(node, kept)
        if final != natural:
            os.ftruncate(fd, final)
        node.pending = []
        node.pending_bytes = 0
        self.dirty.pop(node.ino, None)

    def _tear(self, offset: int, data: bytes, rng: random.Random) -> list[tuple]:
        """A write partly applied: some of its sectors, or a prefix."""
        size = self.sector
        first, last = offset // size, (offset + len(data) - 1) // size
        if last > first and rng.random() < 0.5:
            sectors = list(range(first, last + 1))
            keep = [s for s in sectors if rng.random() < 0.5]
            if not keep:
                keep = [rng.choice(sectors)]
            elif len(keep) == len(sectors):
                keep.remove(rng.choice(keep))
            pieces = []
            for s in keep:
                lo, hi = max(offset, s * size), min(offset + len(data), (s + 1) * size)
                if pieces and pieces[-1][1] + len(pieces[-1][2]) == lo:
                    prev = pieces.pop()
                    pieces.append((WRITE, prev[1], prev[2] + data[lo - offset:hi - offset]))
                else:
                    pieces.append((WRITE, lo, data[lo - offset:hi - offset]))
            return pieces
        return [(WRITE, offset, data[:rng.randrange(1, len(data))])]

    def finish(self) -> None:
        """After a cut or a sync_all: closes descriptors and frees the store."""
        self.dead = True
        for node in self.nodes.values():
            if node.fd is not None:
                try:
                    os.close(node.fd)
                except OSError:
                    pass
                node.fd = None
        shutil.rmtree(self.store, ignore_errors=True)
        self.finished = True


# ------------------------------------------------------------------------------------------
# The FUSE side (pyfuse3 + trio), imported only by `mount`.


def _make_operations(model: Model, log):
    import pyfuse3

    def entry(node: Node) -> "pyfuse3.EntryAttributes":
        attrs = pyfuse3.EntryAttributes()
        for key, value in model.stat(node).items():
            setattr(attrs, key, value)
        attrs.generation = 0
        attrs.entry_timeout = CACHE_TIMEOUT
        attrs.attr_timeout = CACHE_TIMEOUT
        return attrs

    def run(function, *args):
        if model.dead:
            raise pyfuse3.FUSEError(errno.EIO)
        try:
            return function(*args)
        except pyfuse3.FUSEError:
            raise
        except FsError as error:
            raise pyfuse3.FUSEError(error.errno) from None
        except OSError as error:
            log(f"lossyfs: {function.__name__}: {error}")
            raise pyfuse3.FUSEError(error.errno or errno.EIO) from None
        except Exception:  # a bug: report it, keep serving
            log(f"lossyfs: {function.__name__} failed:\n{traceback.format_exc()}")
            raise pyfuse3.FUSEError(errno.EIO) from None

    class Operations(pyfuse3.Operations):
        enable_writeback_cache = False

        async def lookup(self, parent_inode, name, ctx):
            return run(lambda: entry(model.lookup(parent_inode, name)))

        async def forget(self, inode_list):
            for ino, count in inode_list:
                try:
                    model.forget(ino, count)
                except Exception:
                    log(f"lossyfs: forget failed:\n{traceback.format_exc()}")

        async def getattr(self, inode, ctx):
            return run(lambda: entry(model.node(inode)))

        async def setattr(self, inode, attr, fields, fh, ctx):
            def do():
                node = model.handle(fh).node if fh is not None and fh in model.handles else model.node(inode)
                model.setattr(
                    node,
                    size=attr.st_size if fields.update_size else None,
                    mode=attr.st_mode if fields.update_mode else None,
                    uid=attr.st_uid if fields.update_uid else None,
                    gid=attr.st_gid if fields.update_gid else None,
                    atime_ns=attr.st_atime_ns if fields.update_atime else None,
                    mtime_ns=attr.st_mtime_ns if fields.update_mtime else None)
                return entry(node)
            return run(do)

        async def readlink(self, inode, ctx):
            return run(lambda: model.readlink(model.node(inode)))

        async def mknod(self, parent_inode, name, mode, rdev, ctx):
            return run(lambda: entry(model.mknod(parent_inode, name, mode & ~ctx.umask, rdev,
                                                 ctx.uid, ctx.gid)))

        async def mkdir(self, parent_inode, name, mode, ctx):
            return run(lambda: entry(model.mkdir(parent_inode, name, mode & ~ctx.umask,
                                                 ctx.uid, ctx.gid)))

        async def unlink(self, parent_inode, name, ctx):
            run(model.unlink, parent_inode, name)

        async def rmdir(self, parent_inode, name, ctx):
            run(model.rmdir, parent_inode, name)

        async def symlink(self, parent_inode, name, target, ctx):
            return run(lambda: entry(model.symlink(parent_inode, name, target, ctx.uid, ctx.gid)))

        async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
            run(model.rename, parent_inode_old, name_old, parent_inode_new, name_new, flags)

        async def link(self, inode, new_parent_inode, new_name, ctx):
            return run(lambda: entry(model.link(inode, new_parent_inode, new_name)))

        async def open(self, inode, flags, ctx):
            return run(lambda: pyfuse3.FileInfo(fh=model.open(model.node(inode), flags)))

        async def create(self, parent_inode, name, mode, flags, ctx):
            def do():
                fh, node = model.create(parent_inode, name, mode & ~ctx.umask, flags, ctx.uid, ctx.gid)
                return pyfuse3.FileInfo(fh=fh), entry(node)
            return run(do)

        async def read(self, fh, off, size):
            return run(lambda: model.read(model.handle(fh).node, off, size))

        async def write(self, fh, off, buf):
            return run(lambda: model.write(model.handle(fh).node, off, buf))

        async def flush(self, fh):
            pass

        async def release(self, fh):
            if not model.dead:
                run(model.release, fh)

        async def fsync(self, fh, datasync):
            run(lambda: model.fsync(model.handle(fh).node))

        async def opendir(self, inode, ctx):
            return run(lambda: model.opendir(model.node(inode)))

        async def readdir(self, fh, start_id, token):
            def do():
                handle = model.handle(fh)
                if start_id == 0 or handle.snapshot is None:
                    handle.snapshot = model.dir_snapshot(handle.node)
                for index in range(start_id, len(handle.snapshot)):
                    name, ino = handle.snapshot[index]
                    node = model.nodes.get(ino)
                    if node is None:
                        continue
                    if not pyfuse3.readdir_reply(token, name, entry(node), index + 1):
                        break
                    if name not in (b".", b".."):
                        node.lookups += 1
            run(do)

        async def releasedir(self, fh):
            model.releasedir(fh)

        async def fsyncdir(self, fh, datasync):
            run(lambda: model.fsyncdir(model.handle(fh).node))

        async def statfs(self, ctx):
            def do():
                vfs = model.statfs()
                out = pyfuse3.StatvfsData()
                for key in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                            "f_ffree", "f_favail"):
                    setattr(out, key, getattr(vfs, key))
                out.f_namemax = NAME_MAX
                return out
            return run(do)

        async def access(self, inode, mode, ctx):
            return True

    return Operations()


def _lazy_unmount(mountpoint: str) -> None:
    """Detaches the mount now (MNT_DETACH): the mount point is free for the next mount even
    if a killed process's descriptors still linger."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.umount2(os.fsencode(mountpoint), 2) == 0:  # MNT_DETACH
            return
    force_unmount(mountpoint)


def _lock_backing(backing: str, wait: float) -> int:
    fd = os.open(backing, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise LossyError(f"lossyfs: another lossyfs serves {backing}")
            time.sleep(0.05)


def run_mount(args) -> int:
    try:
        import pyfuse3
        import trio
    except ImportError:
        if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and os.path.exists(DEBIAN_PYTHON):
            os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, THIS_FILE] + sys.argv[1:])
        print("lossyfs: needs pyfuse3: apt-get install fuse3 python3-pyfuse3", file=sys.stderr)
        return 2

    log_file = open(args.log, "a", buffering=1) if args.log else None
    prefix = f"lossyfs[{os.getpid()}]"

    def log(line: str) -> None:
        line = line.replace("lossyfs:", prefix + ":", 1) if line.startswith("lossyfs:") else f"{prefix}: {line}"
        print(line, file=sys.stderr, flush=True)
        if log_file:
            log_file.write(line + "\n")

    backing, mountpoint = os.path.abspath(args.backing), os.path.abspath(args.mountpoint)
    if not os.path.isdir(backing):
        print(f"lossyfs: no directory {backing}", file=sys.stderr)
        return 2
    if _is_dead_mount(mountpoint):
        force_unmount(mountpoint)
    if os.path.ismount(mountpoint):
        print(f"lossyfs: {mountpoint} is a mount point already", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    os.umask(0)
    lock_fd = _lock_backing(backing, wait=15.0)
    model = Model(backing, log, keep_prob=args.keep_prob, torn_prob=args.torn_prob,
                  size_prob=args.size_prob, sector=args.sector)
    operations = _make_operations(model, log)
    options = set(pyfuse3.default_options) | {"fsname=lossyfs", "subtype=lossyfs", "default_permissions"}
    if args.allow_other:
        options.add("allow_other")
    if args.debug:
        options.add("debug")
    pyfuse3.init(operations, mountpoint, options)
    state = {"unmounted": False}

    def execute(line: str) -> tuple[str, bool]:
        """Runs a control command; returns (reply, exit afterwards)."""
        words = line.split()
        head = f"ok pid={os.getpid()} mode={args.mode} seed={seed}"
        if not words:
            return "error: empty command\n", False
        command = words[0]
        if command == "status":
            counts = model.counts()
            return head + " " + " ".join(f"{k}={v}" for k, v in counts.items()) + \
                f" cut={'yes' if model.dead else 'no'}\n", False
        if model.dead:
            return "error: already cut or unmounted\n", False
        if command == "pending":
            return head + "\n" + "".join(line + "\n" for line in model.pending_lines()), False
        if command == "sync":
            model.sync_all()
            return head + "\n", False
        if command == "cut":
            mode = words[1] if len(words) > 1 else args.mode
            cut_seed = int(words[2]) if len(words) > 2 else seed
            if mode not in ("all", "random"):
                return f"error: unknown mode {mode}\n", False
            lines = model.cut(mode, cut_seed)
            model.finish()
            for text in lines:
                log(text)
            _lazy_unmount(mountpoint)
            state["unmounted"] = True
            log(f"power cut done; unmounted {mountpoint}")
            return f"ok pid={os.getpid()} mode={mode} seed={cut_seed}\n" + \
                "".join(text + "\n" for text in lines), True
        if command == "unmount":
            model.sync_all()
            model.finish()
            _lazy_unmount(mountpoint)
            state["unmounted"] = True
            log(f"clean unmount of {mountpoint}")
            return head + "\n", True
        return f"error: unknown command {command!r}\n", False

    def terminate():
        try:
            pyfuse3.terminate()
        except Exception:
            pass

    async def serve_client(stream):
        data = b""
        with trio.move_on_after(10):
            while b"\n" not in data and len(data) < 65536:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                data += chunk
        try:
            reply, leave = execute(data.decode(errors="replace").strip())
        except Exception:
            reply, leave = f"error: {traceback.format_exc()}", False
            log(reply)
        try:
            await stream.send_all(reply.encode())
            await stream.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        if leave:
            terminate()

    async def serve_control(nursery, task_status=trio.TASK_STATUS_IGNORED):
        path = os.path.abspath(args.control)
        temp = f"{path}.{os.getpid()}.tmp"
        for stale in (temp, path):
            try:
                os.unlink(stale)
            except FileNotFoundError:
                pass
        sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        await sock.bind(temp)
        sock.listen(16)
        os.rename(temp, path)  # appears only when it answers
        listener = trio.SocketListener(sock)
        task_status.started()
        try:
            while True:
                stream = await listener.accept()
                nursery.start_soon(serve_client, stream)
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass

    async def watch_signals():
        with trio.open_signal_receiver(signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                command = "cut" if signum == signal.SIGUSR1 else "unmount"
                log(f"signal {signal.Signals(signum).name}: {command}")
                _reply, leave = execute(command)
                if leave:
                    terminate()
                    return

    async def main():
        async with trio.open_nursery() as nursery:
            if args.control:
                await nursery.start(serve_control, nursery)
            nursery.start_soon(watch_signals)
            log(f"mounted {backing} on {mountpoint} (mode={args.mode} seed={seed}"
                f"{' control=' + args.control if args.control else ''})")
            await pyfuse3.main()
            nursery.cancel_scope.cancel()

    status = 0
    try:
        trio.run(main)
    except BaseException:
        log(f"lossyfs: main loop failed:\n{traceback.format_exc()}")
        status = 1
    finally:
        if not model.finished and not model.dead:
            # Unmounted from outside (umount/fusermount3 -u): a clean unmount syncs everything.
            try:
                model.sync_all()
                model.finish()
                log("unmounted from outside: synced everything")
            except Exception:
                log(f"lossyfs: final sync failed:\n{traceback.format_exc()}")
        try:
            pyfuse3.close(unmount=not state["unmounted"])
        except Exception:
            pass
        os.close(lock_fd)
        if log_file:
            log_file.close()
    return status


# ------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="lossyfs.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    mount = sub.add_parser("mount", help="mount BACKING on MOUNTPOINT, in the foreground")
    mount.add_argument("backing")
    mount.add_argument("mountpoint")
    mount.add_argument("--control", help="Unix socket for commands (cut, sync, status, unmount)")
    mount.add_argument("--seed", type=int, help="seed of the random cut (default: random, logged)")
    mount.add_argument("--mode", choices=("all", "random"), default="all",
                       help="what a cut drops: all pending state, or a random subset")
    mount.add_argument("--log", help="append log lines (what a cut drops) to this file too")
    mount.add_argument("--keep-prob", type=float, default=0.5,
                       help="random mode: chance that a pending write/truncate/namespace op survives")
    mount.add_argument("--torn-prob", type=float, default=0.15,
                       help="random mode: chance that a pending write survives in part")
    mount.add_argument("--size-prob", type=float, default=0.5,
                       help="random mode: chance that a file keeps its unsynced size")
    mount.add_argument("--sector", type=int, default=512, help="sector size of torn writes")
    mount.add_argument("--allow-other", action="store_true", help="let other users in")
    mount.add_argument("--debug", action="store_true", help="libfuse debug output")
    for name, text in (("cut", "power cut: drop pending state, unmount, exit"),
                       ("sync", "make everything durable now"),
                       ("status", "pid, mode, seed and pending counts"),
                       ("pending", "list every pending item")):
        command = sub.add_parser(name, help=text)
        command.add_argument("--control", required=True)
        if name == "cut":
            command.add_argument("--mode", choices=("all", "random"))
            command.add_argument("--seed", type=int)
    unmount = sub.add_parser("unmount", help="clean unmount via --control, or force a MOUNTPOINT")
    unmount.add_argument("mountpoint", nargs="?")
    unmount.add_argument("--control")
    args = parser.parse_args(argv)

    if args.command == "mount":
        return run_mount(args)
    try:
        if args.command == "unmount":
            if args.control:
                try:
                    lines = control(args.control, "unmount")
                    pid = int(_reply_fields(lines[0]).get("pid", "0"))
                    if pid:
                        wait_pid_gone(pid)
                    return 0
                except OSError:
                    if not args.mountpoint:
                        raise
            if not args.mountpoint:
                parser.error("unmount needs --control or a MOUNTPOINT")
            if not force_unmount(args.mountpoint):
                print(f"lossyfs: could not unmount {args.mountpoint}", file=sys.stderr)
                return 1
            return 0
        if args.command == "cut":
            mode = args.mode or ""
            if args.seed is not None and not mode:
                mode = _reply_fields(control(args.control, "status")[0]).get("mode", "all")
            lines = control(args.control, " ".join(
                ["cut", mode] + ([str(args.seed)] if args.seed is not None else [])))
        else:
            lines = control(args.control, args.command)
    except (OSError, LossyError) as error:
        print(f"lossyfs: {error}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    if args.command == "cut":
        pid = int(_reply_fields(lines[0]).get("pid", "0"))
        if pid and not wait_pid_gone(pid):
            print(f"lossyfs: server {pid} still running after the cut", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
