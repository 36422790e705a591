#!/usr/bin/env bash
# Boots the e2e guest (q35, igb PFs behind pcie-root-ports) and runs one command in it, chrooted into a
# copy-on-write view of the host root. The console streams to stdout; the exit code is the command's.
#
# Usage: hack/vm/run.sh [options] [--] COMMAND...     (COMMAND is run by /bin/sh -c in the guest)
#        hack/vm/run.sh [options] --job DIR           (DIR/cmd is the script; DIR/env is sourced first)
# Options:
#   --igb N                  igb (82576) PFs, 0..4 (default 1)
#   --apiserver PORT         forward guest 10.0.2.100:6443 to host 127.0.0.1:PORT (default: no forward)
#   --timeout SECONDS        kill the VM after this long (default 300); exit 124
#   --mem MB / --smp N       guest size (default 1024 / 2)
#   --accel kvm|tcg|auto     (default auto: KVM only if a short probe boots, cached per host boot); under TCG
#                            the vCPUs share one host thread unless SRIOVOP_VM_TCG_THREAD=multi
#   --hostname NAME          guest hostname (default sriovop-e2e)
#   --iommu                  add an emulated Intel IOMMU (and intel_iommu=on iommu=pt, the arguments the config
#                            daemon wants for vfio-pci, unless --cmdline is given) so VFs can be bound to vfio-pci
#   --cmdline LINE           the kernel command line a boot loader read from the boot entry (under TCG
#                            nohz=off is appended: an idle vCPU that misses a timer wake-up loses a tick)
#   --persist DIR            read-write share that outlives the guest: DIR/boot is the guest's /boot and
#                            DIR/state its /etc/sriov-operator (boot entries, operator state across "reboots")
# Exit: the guest command's code; 124 on timeout; 125 when the guest gave no exit code.
# The guest prints "SRIOVOP-GUEST-READY: uptime=<s>" before the command and "SRIOVOP-GUEST-EXIT: <rc>".
# QEMU's monitor (QMP) listens on JOB/qmp.sock, so a harness can ask where a stalled boot is.
set -euo pipefail
VM_SCRIPT=run
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

IOMMU= IGB=1 PORT= TIMEOUT=300 MEM=1024 SMP=2 ACCEL=${SRIOVOP_VM_ACCEL:-auto} JOB= HOSTNAME_=sriovop-e2e
CMDLINE= PERSIST=
while [ $# -gt 0 ]; do
  case $1 in
    --igb) IGB=$2; shift 2 ;;
    --apiserver) PORT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --smp) SMP=$2; shift 2 ;;
    --accel) ACCEL=$2; shift 2 ;;
    --job) JOB=$2; shift 2 ;;
    --hostname) HOSTNAME_=$2; shift 2 ;;
    --iommu) IOMMU=1; shift ;;
    --cmdline) CMDLINE=$2; shift 2 ;;
    --persist) PERSIST=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
case $IGB in [0-4]) ;; *) die "--igb: expected 0..4, got '$IGB'" ;; esac
case $PORT in ''|*[!0-9]*) [ -z "$PORT" ] || die "--apiserver: expected a TCP port, got '$PORT'" ;; esac
case $TIMEOUT in ''|*[!0-9]*) die "--timeout: expected whole seconds, got '$TIMEOUT'" ;; esac

KDIR=$("$HERE/setup.sh")   # honours SRIOVOP_VM_KERNEL_PACKAGE (e.g. the bpo 6.12 kernel, .ko.xz modules)
KVER=$(cat "$KDIR/kver")
INITRD=$("$HERE/build-initramfs.sh" "$KDIR")
KERNEL=$KDIR/boot/vmlinuz-$KVER

if [ -z "$JOB" ]; then
  [ $# -gt 0 ] || die "no command (see --help)"
  JOB=$(mktemp -d /tmp/sriovop-vm-job.XXXXXX)
  trap 'rm -rf "$JOB"' EXIT
  printf '%s\n' "$*" > "$JOB/cmd"
fi
[ -f "$JOB/cmd" ] || die "$JOB/cmd missing"
# QEMU's option syntax splits on commas, and the forward's command line on spaces.
[ -z "$PERSIST" ] || { mkdir -p "$PERSIST/boot" "$PERSIST/state"; PERSIST=$(cd "$PERSIST" && pwd); }
for p in "$JOB" "$HERE" "$KDIR" $PERSIST; do
  case $p in *,*|*" "*) die "path '$p' contains a comma or a space, which QEMU options cannot carry" ;; esac
done
rm -f "$JOB/rc" "$JOB/stop"

ACCEL=$("$HERE/probe-kvm.sh" "$ACCEL" "$KERNEL" "$INITRD")
# Intel's vendor string: the IOMMU is QEMU's intel-iommu, and the config daemon picks the IOMMU kernel
# arguments by CPU vendor (intel_iommu=on only for GenuineIntel), as upstream does.
CPU=${SRIOVOP_VM_CPU:-max,vendor=GenuineIntel}; [ "$ACCEL" = kvm ] && CPU=host
# Under TCG an idle vCPU can miss the kick that should wake it for its timer (seen beside two CPU hogs:
# vCPU 0 idle, "rcu_preempt kthread timer wakeup didn't happen" for a minute, then every task waiting on
# RCU hung for good). With the periodic tick (nohz=off) an idle vCPU still takes a timer interrupt every
# tick, so a lost kick costs one tick. It is QEMU's platform argument, appended to whatever line the boot
# loader gives (--cmdline), as firmware would; the guest's tests compare argument sets, not lines.
# It does not help when vCPU 0 halts with the timer vector stuck in its LAPIC's in-service register
# (a lost EOI; README.md, "Known problem").
PLATFORM_ARGS=; [ "$ACCEL" = tcg ] && PLATFORM_ARGS=" nohz=off"
# Under TCG the vCPUs take turns in one host thread (thread=single) rather than a thread each, so they
# never run at the same time. The lost-EOI hang (README.md, "Known problem") came with a thread each, beside
# two CPU hogs, right after the two vCPUs had sent each other IPIs. One thread costs time on an idle machine
# (`make e2e` 372.6 s against 271.5 s). SRIOVOP_VM_TCG_THREAD=multi brings the threaded mode back.
TCG_THREAD=${SRIOVOP_VM_TCG_THREAD:-single}
case $TCG_THREAD in single|multi) ;; *) die "SRIOVOP_VM_TCG_THREAD: expected single or multi, got '$TCG_THREAD'" ;; esac
ACCEL_OPTS=$ACCEL; [ "$ACCEL" = tcg ] && ACCEL_OPTS="tcg,thread=$TCG_THREAD"

# -nodefaults: no VGA/IDE/default NIC; romfile= on the NICs skips iPXE option ROMs (seconds under TCG).
args=(-machine q35 -accel "$ACCEL_OPTS" -cpu "$CPU" -m "$MEM" -smp "$SMP" -nodefaults -display none
      -serial stdio -no-reboot
      -qmp "unix:$JOB/qmp.sock,server=on,wait=off"
      -kernel "$KERNEL" -initrd "$INITRD"
      -append "${CMDLINE:-$(cat "$HERE/base-cmdline") sriovop.hostname=$HOSTNAME_${IOMMU:+ intel_iommu=on iommu=pt}}$PLATFORM_ARGS"
      -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
      -virtfs "local,path=$JOB,mount_tag=job,security_model=none,multidevs=remap"
      -virtfs "local,path=$KDIR/lib/modules/$KVER,mount_tag=modules,security_model=none,readonly=on")
[ -n "$PERSIST" ] && args+=(-virtfs "local,path=$PERSIST,mount_tag=persist,security_model=none,multidevs=remap")
# The IOMMU must exist before the PCI devices it translates for.
[ -n "$IOMMU" ] && args+=(-device intel-iommu,intremap=off)
# Management NIC: its own user-mode network with restrict=on (nothing beyond the guest is reachable)
# plus, when asked, one explicit forward of 10.0.2.100:6443 to the host's apiserver. `cmd:` makes QEMU
# spawn a fresh connector per guest connection; a chardev target (`...-tcp:host:port`) is a single byte
# stream opened when QEMU starts, which cannot carry a client's several concurrent connections.
mgmt="user,id=mgmt,restrict=on"
if [ -n "$PORT" ]; then
  mgmt="$mgmt,guestfwd=tcp:10.0.2.100:6443-cmd:$HERE/forward.py 127.0.0.1 $PORT"
fi
args+=(-netdev "$mgmt" -device "virtio-net-pci,netdev=mgmt,mac=52:54:00:5e:e2:e0,romfile=")
for i in $(seq 0 $((IGB - 1))); do
  args+=(-netdev "user,id=n$i,restrict=on"
         -device "pcie-root-port,id=rp$i,chassis=$((i + 1)),slot=$((i + 1))"
         -device "igb,bus=rp$i,netdev=n$i,id=pf$i,mac=52:54:00:00:1$i:00,romfile=")
done

step "booting $KVER (accel=$ACCEL_OPTS, igb=$IGB, apiserver=${PORT:-none}, timeout=${TIMEOUT}s${CMDLINE:+, cmdline: $CMDLINE})"
set +e
timeout --foreground -k 5 "$TIMEOUT" qemu-system-x86_64 "${args[@]}" < /dev/null
qrc=$?
set -e
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
  step "timeout after ${TIMEOUT}s"
  exit 124
fi
[ -f "$JOB/rc" ] || { step "qemu exited $qrc without a guest exit code"; exit 125; }
rc=$(cat "$JOB/rc")
step "guest command exited $rc"
exit "$rc"
