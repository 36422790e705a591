#!/usr/bin/env bash
# Builds the e2e guest's initramfs for the cached kernel: busybox-static, init.sh, and the modules for
# 9p over virtio, overlayfs, virtio-net (the management NIC that carries the apiserver forward), and
# igb/igbvf with their dependencies, in the load order computed from modules.dep (.ko.xz/.ko.zst are
# decompressed here so the guest's busybox insmod can load them). Cached by kernel and input hash.
#
# Usage: hack/vm/build-initramfs.sh KERNEL_DIR     (prints the initramfs path)
# Env:   SRIOVOP_VM_EXTRA_MODULES  more module names to load (after the base set, before igb)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

KDIR=${1:?usage: build-initramfs.sh KERNEL_DIR}
KVER=$(cat "$KDIR/kver")
MODDIR=$KDIR/lib/modules/$KVER
[ -f "$MODDIR/modules.dep" ] || die "$MODDIR/modules.dep missing (re-run hack/vm/fetch-kernel.sh)"
BUSYBOX=${SRIOVOP_VM_BUSYBOX:-/bin/busybox}
file -L "$BUSYBOX" 2>/dev/null | grep -q 'dynamically linked' && die "$BUSYBOX is dynamically linked; install busybox-static"

BASE_MODULES="virtio_pci virtio_net 9pnet_virtio 9p overlay ${SRIOVOP_VM_EXTRA_MODULES:-}"
NIC_MODULES="igb igbvf"
KEY=$( (echo "$KVER $BASE_MODULES / $NIC_MODULES"; cat "$HERE/init.sh" "$0"; sha256sum "$BUSYBOX") | sha256sum | cut -c1-16)
OUT=$VM_CACHE/initramfs/$KVER-$KEY.cpio.gz
if [ -f "$OUT" ]; then
  step "cached: $OUT"
  echo "$OUT"
  exit 0
fi

vm_lock
[ -f "$OUT" ] && { echo "$OUT"; exit 0; }

# modules.dep lists each module's transitive dependencies, deepest last: loading the list reversed, then
# the module itself, is modprobe's order. Builtin modules have no entry and need nothing.
load_order() {
  local seen=" " m line deps d
  for m in "$@"; do
    m=${m//-/_}
    line=$(awk -v m="$m" -F: '{ n=$1; sub(/.*\//, "", n); sub(/\.ko(\.(xz|zst|gz))?$/, "", n); gsub(/-/, "_", n);
                                if (n == m) { print; exit } }' "$MODDIR/modules.dep")
    if [ -z "$line" ]; then
      grep -qE "/${m//_/[-_]}\.ko" "$MODDIR/modules.builtin" || die "module $m: neither in modules.dep nor builtin"
      continue
    fi
    deps=$(echo "${line#*:}" | tr ' ' '\n' | tac)
    for d in $deps "${line%%:*}"; do
      case $seen in *" $d "*) ;; *) seen="$seen$d "; echo "$d" ;; esac
    done
  done
}

W=$(mktemp -d)
trap 'rm -rf "$W" "$W.cpio.gz"' EXIT
mkdir -p "$W"/{bin,dev,proc,sys,lib/modules,run,tmp}
cp "$BUSYBOX" "$W/bin/busybox"
cp "$HERE/init.sh" "$W/init" && chmod 755 "$W/init"

pack_list() {  # list-name modules...
  local name=$1 rel base order; shift
  : > "$W/lib/modules/$name"
  order=$(load_order "$@") || exit 1   # a die() inside $(...) only leaves the subshell
  for rel in $order; do
    base=$(basename "$rel"); base=${base%.xz}; base=${base%.zst}; base=${base%.gz}
    case $rel in
      *.xz) xz -dc "$MODDIR/$rel" > "$W/lib/modules/$base" ;;
      *.zst) zstd -qdc "$MODDIR/$rel" > "$W/lib/modules/$base" ;;
      *.gz) gzip -dc "$MODDIR/$rel" > "$W/lib/modules/$base" ;;
      *) cp "$MODDIR/$rel" "$W/lib/modules/$base" ;;
    esac
    echo "$base" >> "$W/lib/modules/$name"
  done
}
# Shared dependencies (virtio, virtio_ring) must not be loaded twice: the nic list skips what base has.
pack_list base.list $BASE_MODULES
pack_list nic.list $NIC_MODULES
grep -vxFf "$W/lib/modules/base.list" "$W/lib/modules/nic.list" > "$W/lib/modules/nic.tmp" || true
mv "$W/lib/modules/nic.tmp" "$W/lib/modules/nic.list"
step "modules ($KVER): $(tr '\n' ' ' < "$W/lib/modules/base.list")| $(tr '\n' ' ' < "$W/lib/modules/nic.list")"

mkdir -p "$(dirname "$OUT")"
(cd "$W" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1) > "$W.cpio.gz"
mv "$W.cpio.gz" "$OUT"
step "built $OUT ($(du -h "$OUT" | cut -f1))"
echo "$OUT"
