#!/usr/bin/env bash
# Decides the accelerator: KVM only if a guest actually boots with it within a short timeout (on some
# build machines /dev/kvm exists but KVM hangs right after SeaBIOS), else TCG. The verdict is cached per
# host boot, so only the first run pays for the probe.
#
# Usage: hack/vm/probe-kvm.sh auto|kvm|tcg KERNEL INITRD     (prints kvm or tcg)
set -euo pipefail
VM_SCRIPT=probe-kvm
. "$(dirname "$0")/lib.sh"
WANT=${1:?usage: probe-kvm.sh auto|kvm|tcg KERNEL INITRD}
case $WANT in
  kvm|tcg) echo "$WANT"; exit 0 ;;
  auto) ;;
  *) die "accel: expected auto, kvm or tcg, got '$WANT'" ;;
esac
KERNEL=$2 INITRD=$3
if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then echo tcg; exit 0; fi
BOOT_ID=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
CACHE=$VM_CACHE/kvm-probe.$BOOT_ID
if [ -f "$CACHE" ]; then cat "$CACHE"; exit 0; fi
step "probing KVM (up to ${SRIOVOP_VM_KVM_PROBE_TIMEOUT:-10}s)"
out=$(timeout -k 2 "${SRIOVOP_VM_KVM_PROBE_TIMEOUT:-10}" qemu-system-x86_64 -machine q35 -accel kvm -cpu host \
        -m 256 -nographic -no-reboot -nic none -kernel "$KERNEL" -initrd "$INITRD" \
        -append "console=ttyS0 panic=-1 quiet sriovop.probe" < /dev/null 2>&1) || true
mkdir -p "$VM_CACHE"
if grep -q SRIOVOP-PROBE-OK <<<"$out"; then verdict=kvm; else verdict=tcg; fi
rm -f "$VM_CACHE"/kvm-probe.*
echo "$verdict" > "$CACHE"
step "KVM probe: $verdict"
echo "$verdict"
