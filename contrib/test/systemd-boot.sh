#!/bin/sh
# Boots a real systemd as PID 1 of a private PID and mount namespace, for the integration tests
# (contrib/DESIGN.md, "Tests"). Run as root, never directly:
#   unshare --pid --fork --mount --mount-proc contrib/test/systemd-boot.sh
# contrib/test/systemd-ns.sh does that and drives the result.
set -e
if [ "$$" != 1 ]; then
    echo "systemd-boot.sh: must run as PID 1 of a new PID namespace (use contrib/test/systemd-ns.sh start)" >&2
    exit 64
fi
# Private /tmp, /run, HOME and systemd's state: booting on the shared /tmp wipes it. unshare made
# the mounts private, so none of this reaches the host; the tmpfs on /var/lib/systemd (linger, random
# seed, timers), /var/tmp (PrivateTmp=) and /var/log/journal keeps the boot from writing the host's disk.
# The repository (its binaries and test files) may itself live under one of those (a clone in
# /tmp or /root): hold it open, and bind it back to the same path on top of the new tmpfs.
repository=$(cd "$(dirname "$0")/../.." && pwd)
exec 9<"$repository"
for d in /tmp /run /root /var/tmp /var/lib/systemd /var/log/journal; do
    [ -d "$d" ] || continue
    mount -t tmpfs -o mode=0755 tmpfs "$d"
done
if [ ! -e "$repository/Package.swift" ]; then
    mkdir -p "$repository"
    # --no-canonicalize: resolving the fd link would name the path the tmpfs now hides.
    mount --no-canonicalize --bind /proc/self/fd/9 "$repository"
fi
exec 9<&-
mkdir -p /var/lib/systemd/linger
chmod 1777 /tmp /var/tmp
chmod 0700 /root
mkdir -p /run/systemd/system
# Mask what would change the shared kernel, clock, /dev or the host's files (sysctl, binfmt, modules,
# sysusers, utmp, tmpfiles, journal flush to /var, random seed, timesync, the /dev/log symlink on the
# host's devtmpfs) and the image's timers.
for unit in systemd-remount-fs.service systemd-sysctl.service systemd-binfmt.service \
    proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount systemd-modules-load.service \
    kmod-static-nodes.service systemd-sysusers.service systemd-update-utmp.service \
    systemd-update-utmp-runlevel.service systemd-journal-flush.service systemd-journal-catalog-update.service \
    systemd-tmpfiles-setup.service systemd-tmpfiles-setup-dev.service systemd-tmpfiles-clean.timer \
    systemd-random-seed.service systemd-machine-id-commit.service systemd-firstboot.service \
    systemd-hwdb-update.service ldconfig.service systemd-timesyncd.service systemd-pstore.service \
    systemd-repart.service e2scrub_reap.service systemd-journald-dev-log.socket timers.target; do
    ln -s /dev/null "/run/systemd/system/$unit"
done
# A small target: dbus and logind for lingering user managers, not the image's nginx or postgres.
printf '[Unit]\nDescription=uploadd test boot\nRequires=dbus.socket systemd-logind.service\nAfter=dbus.socket systemd-logind.service\n' \
    > /run/systemd/system/uploadd-test.target
exec /lib/systemd/systemd --system --unit=uploadd-test.target
