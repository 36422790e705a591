#!/usr/bin/env bash
# Fetches a Debian *generic* amd64 kernel (the cloud flavour has no igb/igbvf) without installing it:
# `apt-get download` + `dpkg-deb -x` into $VM_CACHE/kernel/<package>/. Prints that directory.
# Warm runs reuse the last fetched kernel (the `current` link) without asking apt.
#
# Usage: hack/vm/fetch-kernel.sh
# Env:   SRIOVOP_VM_KERNEL_PACKAGE   exact package (e.g. linux-image-6.1.0-57-amd64); default: whatever
#                                    bookworm's linux-image-amd64 currently depends on
#        SRIOVOP_VM_REFRESH=1        re-resolve the default package even when one is cached
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KDIR=$VM_CACHE/kernel
PKG=${SRIOVOP_VM_KERNEL_PACKAGE:-}
DEFAULT=; [ -z "$PKG" ] && DEFAULT=1

if [ -z "$PKG" ] && [ -z "${SRIOVOP_VM_REFRESH:-}" ] && [ -f "$KDIR/current/.complete" ]; then
  step "cached: $(readlink "$KDIR/current")"
  readlink -f "$KDIR/current"
  exit 0
fi

resolve() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][0-9.a-z+~-]*-amd64\)$/\1/p' | head -1
}
if [ -z "$PKG" ]; then
  PKG=$(resolve)
  if [ -z "$PKG" ]; then
    step "apt-get update (linux-image-amd64 unknown to apt)"
    apt-get update -qq >&2
    PKG=$(resolve)
  fi
  [ -n "$PKG" ] || die "cannot resolve linux-image-amd64 to a versioned package with apt-cache"
fi
case $PKG in
  *cloud*|*rt-amd64*) die "$PKG: use the generic flavour (linux-image-*-amd64); cloud kernels lack igb/igbvf" ;;
  linux-image-*-amd64) ;;
  *) die "$PKG: expected a package named linux-image-<abi>-amd64" ;;
esac

OUT=$KDIR/$PKG
[ -f "$OUT/.complete" ] || vm_lock
if [ ! -f "$OUT/.complete" ]; then
  W=$(mktemp -d "$KDIR.tmp.XXXXXX" 2>/dev/null || { mkdir -p "$KDIR"; mktemp -d "$KDIR.tmp.XXXXXX"; })
  trap 'rm -rf "$W"' EXIT
  chmod 755 "$W"   # apt's _apt user downloads into it
  step "apt-get download $PKG"
  if ! (cd "$W" && apt-get download -q -o APT::Sandbox::User=root "$PKG" >&2); then
    step "apt-get update and retry (package lists may be older than the mirror)"
    apt-get update -qq >&2
    (cd "$W" && apt-get download -q -o APT::Sandbox::User=root "$PKG" >&2) || die "apt-get download $PKG failed"
  fi
  DEB=$(ls "$W"/*.deb)
  step "downloaded $(basename "$DEB") ($(du -h "$DEB" | cut -f1)); unpacking with dpkg-deb -x"
  dpkg-deb -x "$DEB" "$W/root"
  rm -f "$DEB"
  ls "$W"/root/boot/vmlinuz-* >/dev/null 2>&1 || die "$PKG has no /boot/vmlinuz-*"
  # Keep only what the guest needs: the kernel image, modules.* metadata and the driver trees we load.
  KVER=$(basename "$(ls -d "$W"/root/lib/modules/*)")
  rm -rf "$OUT"; mkdir -p "$OUT"
  mv "$W/root/boot" "$OUT/boot"
  mkdir -p "$OUT/lib/modules"
  mv "$W/root/lib/modules/$KVER" "$OUT/lib/modules/$KVER"
  step "depmod $KVER (the .deb ships no modules.dep)"
  PATH=$PATH:/sbin:/usr/sbin depmod -b "$OUT" "$KVER" || die "depmod failed (is kmod installed? run hack/vm/install-qemu.sh)"
  echo "$KVER" > "$OUT/kver"
  touch "$OUT/.complete"
  step "unpacked $KVER into $OUT ($(du -sh "$OUT" | cut -f1))"
fi
# `current` follows the default kernel only; an explicit SRIOVOP_VM_KERNEL_PACKAGE does not move it.
[ -n "$DEFAULT" ] && ln -sfn "$PKG" "$KDIR/current"
echo "$OUT"
