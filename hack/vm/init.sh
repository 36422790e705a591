#!/bin/busybox sh
# PID 1 of the e2e guest (packed into the initramfs by build-initramfs.sh).
#
# Loads the modules, mounts the host root (9p tag `hostroot`, read-only) under a tmpfs overlay so the
# guest sees the host's files (python, the venv, iproute2) but every write stays in guest memory, binds
# the read-write job share (9p tag `job`: cmd, env, and the rc written back) at /run/job and the
# kernel's modules at /lib/modules/<kver>, runs
# /run/job/cmd chrooted into that root, prints "SRIOVOP-GUEST-EXIT: <rc>" on the console and powers off.
# A file /run/job/stop created by the host sends SIGTERM (then SIGKILL after 60 s: a Python daemon under
# TCG on a busy host can take longer than 10 s to stop its threads) to the command's
# process group, which is how a long-lived command (the config daemon) is stopped cleanly. A file
# /run/job/reboot (created in the guest: the config daemon's reboot command) does the same and prints
# "SRIOVOP-GUEST-REBOOT"; the harness then boots the guest again with what the boot entry says.
# With the 9p tag `persist` (run.sh --persist), its boot/ and state/ are the guest's /boot and
# /etc/sriov-operator, so boot entries and operator state survive that "reboot".
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

say() { echo "sriovop-init: $*" > /dev/console; }
# Progress marks before READY: with `quiet` the kernel prints nothing, so without them a boot that stalls
# leaves an empty console and no clue whether the kernel, a module or the 9p share held it up.
say "started (uptime $(cut -d' ' -f1 /proc/uptime))"
finish() {  # rc
  echo "SRIOVOP-GUEST-EXIT: $1" > /dev/console
  [ -d /job ] && { echo "$1" > /job/rc.tmp && mv /job/rc.tmp /job/rc; sync; umount /host/run/job /job 2>/dev/null; }
  poweroff -f
}
fail() { say "FAILED: $*"; finish 125; }

if grep -q 'sriovop.probe' /proc/cmdline; then
  echo "SRIOVOP-PROBE-OK" > /dev/console
  poweroff -f
fi

load() {
  for ko in $(cat "/lib/modules/$1"); do
    insmod "/lib/modules/$ko" 2>/dev/console || say "insmod $ko failed"
  done
}
load base.list
# The management NIC (virtio-net, fixed MAC) is renamed before igb loads, so the igb PFs get eth0, eth1
# as on a host with only those NICs.
for dev in /sys/class/net/*; do
  [ "$(cat "$dev/address" 2>/dev/null)" = "52:54:00:5e:e2:e0" ] && ip link set "${dev##*/}" name mgmt0
done
load nic.list
say "modules loaded"

mkdir -p /lower /rw /host /job
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /lower || fail "mount hostroot"
say "host root mounted"
mount -t tmpfs -o mode=0755 rw /rw && mkdir -p /rw/upper /rw/work
overlay=1
if ! mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /host; then
  say "overlay failed; the guest root is read-only"
  mount --bind /lower /host
  overlay=0
fi
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t tmpfs -o mode=0755 tmpfs /host/run
# The host's /tmp stays visible (a checkout or venv under /tmp, as in CI, must run in the guest); writes
# land in the overlay's memory layer. Only a read-only root needs a tmpfs there.
[ "$overlay" = 1 ] || mount -t tmpfs -o mode=1777 tmpfs /host/tmp
mkdir -p /host/run/job /host/run/netns
# The guest kernel's modules (9p tag `modules`, read-only) where the host's kmod expects them, so that
# `modprobe` in the chroot works (vfio-pci, ...). Needs the writable overlay root for the mount point.
kver=$(uname -r)
if mkdir -p "/host/lib/modules/$kver" 2>/dev/null; then
  mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose modules "/host/lib/modules/$kver" ||
    say "mount modules failed"
fi
if grep -q 'persist' /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag 2>/dev/null; then
  mkdir -p /persist /host/boot /host/etc/sriov-operator
  mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=512000,cache=none persist /persist || fail "mount persist"
  mount --bind /persist/boot /host/boot
  mount --bind /persist/state /host/etc/sriov-operator
fi
mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=512000,cache=none job /job || fail "mount job"
mount --bind /job /host/run/job

hn=$(sed -n 's/.*sriovop.hostname=\([^ ]*\).*/\1/p' /proc/cmdline)
hostname "${hn:-sriovop-e2e}"
ip link set lo up
if [ -e /sys/class/net/mgmt0 ]; then
  ip link set mgmt0 up
  ip addr add 10.0.2.15/24 dev mgmt0
  ip route add default via 10.0.2.2
fi

read -r up _ < /proc/uptime
echo "SRIOVOP-GUEST-READY: uptime=${up}" > /dev/console
export HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
setsid chroot /host /bin/sh -c 'cd /; [ -f /run/job/env ] && . /run/job/env; exec /bin/sh /run/job/cmd' \
  < /dev/null > /dev/console 2>&1 &
pid=$!
deadline=
while kill -0 "$pid" 2>/dev/null; do
  if [ -e /job/reboot ] && [ -z "$deadline" ]; then
    sync
    echo "SRIOVOP-GUEST-REBOOT" > /dev/console
    touch /job/stop
  fi
  if [ -e /job/stop ] && [ -z "$deadline" ]; then
    say "stop requested: SIGTERM to the command"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
    read -r deadline _ < /proc/uptime; deadline=$(( ${deadline%.*} + 60 ))
  fi
  if [ -n "$deadline" ]; then
    read -r now _ < /proc/uptime
    [ "${now%.*}" -ge "$deadline" ] && { say "SIGKILL"; kill -KILL -- "-$pid" 2>/dev/null; }
  fi
  sleep 0.2
done
wait "$pid"
finish $?
