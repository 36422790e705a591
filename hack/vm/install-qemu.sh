#!/usr/bin/env bash
# Installs what the e2e guest needs on the host: QEMU 10.x from bookworm-backports (bookworm's own 7.2
# has no `igb` device; igb first shipped in 8.0), busybox-static for the initramfs, cpio to pack it and
# kmod's depmod (Debian's kernel .deb ships no modules.dep; fetch-kernel.sh generates it).
# Idempotent: when everything is present it only checks `-device help` and returns in well under a second.
#
# Usage: hack/vm/install-qemu.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_igb() {
  command -v qemu-system-x86_64 >/dev/null &&
    qemu-system-x86_64 -device help 2>/dev/null | grep -q '^name "igb"'
}

if have_igb && [ -x /bin/busybox ] && busybox --list 2>/dev/null | grep -qx switch_root && command -v cpio >/dev/null &&
   PATH=$PATH:/sbin:/usr/sbin command -v depmod >/dev/null; then
  step "present: $(qemu-system-x86_64 --version | head -1), busybox-static, cpio, kmod"
  exit 0
fi

[ "$(id -u)" = 0 ] || die "needs root to apt-get install (run as root or install qemu-system-x86 from bookworm-backports)"
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || step "warning: host is ${VERSION_CODENAME:-unknown}, not bookworm; using ${VERSION_CODENAME}-backports"
SUITE=${VERSION_CODENAME:-bookworm}-backports

if ! grep -rqs "$SUITE" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  # The same archive the machine already uses for its release (first deb822 URI, else a one-line entry).
  URI=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
  [ -n "$URI" ] || URI=$(sed 's/\[[^]]*\]//' /etc/apt/sources.list 2>/dev/null | awk '$1=="deb"{print $2; exit}')
  [ -n "$URI" ] || die "no Debian archive in the APT sources to add $SUITE from"
  step "adding $SUITE ($URI) to /etc/apt/sources.list.d/$SUITE.sources"
  cat > "/etc/apt/sources.list.d/$SUITE.sources" <<SRC
Types: deb
URIs: $URI
Suites: $SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

step "apt-get update"
apt-get update -qq >&2 || die "apt-get update failed"
step "apt-get install -t $SUITE qemu-system-x86 (+ busybox-static cpio kmod)"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  -t "$SUITE" qemu-system-x86 >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends busybox-static cpio kmod >&2
have_igb || die "qemu-system-x86_64 is installed but has no igb device: $(qemu-system-x86_64 --version | head -1)"
step "installed: $(qemu-system-x86_64 --version | head -1)"
