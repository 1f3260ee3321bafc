#!/bin/bash
# Drives a throwaway systemd booted as PID 1 of a private PID and mount namespace (systemd-boot.sh),
# for the integration tests and for poking at the units by hand. Root only; never touches the host's
# own init or user session.
#
#   systemd-ns.sh probe              exit 0 when namespaces can be made here, 77 (with the reason
#                                    on stderr) when they are not permitted, 1 otherwise
#   systemd-ns.sh start LOGFILE      boot; print the namespace's PID 1 (a host PID) once the small
#                                    target is up (systemd's own output goes to LOGFILE)
#   systemd-ns.sh run PID CMD...     run CMD inside, with a clean environment for root's user
#                                    manager (XDG_RUNTIME_DIR=/run/user/0, HOME=/root)
#   systemd-ns.sh user PID ARGS...   run `systemctl --user ARGS...` inside
#   systemd-ns.sh stop PID           `systemctl poweroff` inside; SIGKILL the namespace's PID 1 when it
#                                    is still there after 30 seconds (which ends every process in it)
#
# By hand:
#   pid=$(contrib/test/systemd-ns.sh start .build/systemd-boot.log)
#   contrib/test/systemd-ns.sh run "$pid" loginctl enable-linger root
#   contrib/test/systemd-ns.sh user "$pid" status
#   contrib/test/systemd-ns.sh stop "$pid"
set -eu

here=$(cd "$(dirname "$0")" && pwd)
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

die() {
    echo "systemd-ns.sh: $*" >&2
    exit 1
}

# Runs a command inside the namespace whose PID 1 is host PID $1.
inside() {
    pid=$1
    shift
    nsenter -t "$pid" -p -m -u -- env -i PATH="$PATH" HOME=/root USER=root LOGNAME=root SHELL=/bin/sh \
        XDG_RUNTIME_DIR=/run/user/0 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus LANG=C.UTF-8 \
        SYSTEMD_PAGER= SYSTEMD_COLORS=0 "$@"
}

# The host PID of the child unshare forked (the namespace's PID 1), or nothing yet.
child_of() {
    pgrep -P "$1" 2>/dev/null | head -n 1
}

case "${1:-}" in
probe)
    if [ "$(id -u)" != 0 ]; then
        echo "not root (uid $(id -u)): booting systemd in a private namespace needs root" >&2
        exit 77
    fi
    for tool in unshare nsenter pgrep /lib/systemd/systemd; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool is missing"
    done
    if ! out=$(unshare --pid --fork --mount --mount-proc --propagation private /bin/true 2>&1); then
        case "$out" in
        *"Operation not permitted"* | *EPERM*)
            echo "namespaces are not permitted here: unshare --pid --fork --mount: $out" >&2
            exit 77
            ;;
        esac
        die "unshare failed: $out"
    fi
    ;;
start)
    [ $# = 2 ] || die "usage: systemd-ns.sh start LOGFILE"
    log=$2
    # setsid: the namespace does not share the caller's session or terminal signals. Every other
    # descriptor is closed first: a caller that waits for EOF on a pipe or socket it gave us (Swift's
    # Foundation.Process does) would otherwise wait for as long as the namespace lives.
    (
        for fd in /proc/$BASHPID/fd/*; do
            fd=${fd##*/}
            if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-"; fi
        done
        exec setsid unshare --pid --fork --mount --mount-proc --propagation private "$here/systemd-boot.sh"
    ) </dev/null >"$log" 2>&1 &
    parent=$!
    pid=
    tries=0
    while [ -z "$pid" ]; do
        # setsid forks when the caller leads a process group; then unshare is a grandchild.
        for candidate in $parent $(pgrep -P "$parent" 2>/dev/null); do
            if [ "$(cat /proc/"$candidate"/comm 2>/dev/null)" = unshare ]; then
                pid=$(child_of "$candidate")
                [ -n "$pid" ] && break
            fi
        done
        [ -n "$pid" ] && break
        tries=$((tries + 1))
        if [ $tries -gt 100 ]; then
            kill -9 "$parent" 2>/dev/null || true
            die "the namespace did not come up; $log says: $(tail -n 5 "$log")"
        fi
        sleep 0.1
    done
    # Wait until PID 1 is systemd and the small target is reached.
    tries=0
    until [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = systemd ] &&
        inside "$pid" systemctl is-active --quiet uploadd-test.target 2>/dev/null; do
        tries=$((tries + 1))
        if [ $tries -gt 300 ] || ! kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null || true
            die "systemd did not reach uploadd-test.target in 30 s; $log says: $(tail -n 20 "$log")"
        fi
        sleep 0.1
    done
    echo "$pid"
    ;;
run)
    [ $# -ge 3 ] || die "usage: systemd-ns.sh run PID CMD..."
    pid=$2
    shift 2
    inside "$pid" "$@"
    ;;
user)
    [ $# -ge 3 ] || die "usage: systemd-ns.sh user PID ARGS..."
    pid=$2
    shift 2
    inside "$pid" systemctl --user "$@"
    ;;
stop)
    [ $# = 2 ] || die "usage: systemd-ns.sh stop PID"
    pid=$2
    # The namespace's identity, so that a PID reused after the namespace ended is never killed.
    ns=$(readlink "/proc/$pid/ns/pid" 2>/dev/null) || exit 0
    [ "$ns" != "$(readlink /proc/self/ns/pid)" ] || die "$pid is not in a namespace of its own"
    alive() { [ "$(readlink "/proc/$pid/ns/pid" 2>/dev/null)" = "$ns" ]; }
    inside "$pid" systemctl poweroff --no-block >/dev/null 2>&1 || true
    tries=0
    while alive; do
        tries=$((tries + 1))
        if [ $tries -gt 300 ]; then
            echo "systemd-ns.sh: PID 1 of the namespace ($pid) still there after 30 s; killing it" >&2
            kill -9 "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.1
    done
    # PID 1's death ends every process in its namespace; wait for the kernel to reap them.
    tries=0
    while alive && [ $tries -lt 50 ]; do
        tries=$((tries + 1))
        sleep 0.1
    done
    ;;
*)
    die "usage: systemd-ns.sh probe | start LOGFILE | run PID CMD... | user PID ARGS... | stop PID"
    ;;
esac
