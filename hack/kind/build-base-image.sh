#!/usr/bin/env bash
# The kind node's base image from Debian packages, without a registry: mmdebstrap writes a bookworm root
# filesystem with systemd, containerd, runc and the CNI plugins, and `docker import` turns it into a
# one-layer image. The tag carries a hash of the package list, so a changed list builds a new base and
# an unchanged one is reused.
#
# Usage: hack/kind/build-base-image.sh            (prints the image name on its last line)
# Env:   DEBIAN_SUITE (default bookworm), DOCKER (default docker), PYTHON (default .venv/bin/python)
set -euo pipefail

SUITE=${DEBIAN_SUITE:-bookworm}
DOCKER=${DOCKER:-docker}
# What a kind node runs besides Kubernetes: systemd as PID 1, containerd + runc, the reference CNI plugins
# (Debian installs them in /usr/lib/cni; the node image links /opt/cni/bin there), and the tools kube-proxy,
# the kubelet and kind's own steps call (iptables, conntrack, mount, ip, ethtool, socat).
PACKAGES=(systemd systemd-sysv dbus containerd runc containernetworking-plugins
          iptables nftables conntrack iproute2 ethtool util-linux mount kmod procps
          ca-certificates bash libseccomp2 socat ebtables findutils)
KEY=$(printf '%s\n' "$SUITE" "${PACKAGES[@]}" | sha256sum | cut -c1-12)
IMAGE="sriovop/kind-base:$SUITE-$KEY"

say() { printf '[kind-base] %s\n' "$*" >&2; }

if "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; then
  say "cached: $IMAGE"
  echo "$IMAGE"
  exit 0
fi
command -v mmdebstrap >/dev/null || { say "mmdebstrap is not installed (apt-get install mmdebstrap)"; exit 1; }
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The machine's own APT sources for the suite (and its -updates and -security), as the other images use.
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
mapfile -t SOURCES < <(PYTHONPATH="$REPO" "$PYTHON" -c \
  'import sys; from sriovop.devcluster.images.apt_sources import debian_sources as d; print("\n".join(d(sys.argv[1])))' "$SUITE")
TARBALL="${XDG_CACHE_HOME:-$HOME/.cache}/sriovop/kind/base-$SUITE-$KEY.tar"
mkdir -p "$(dirname "$TARBALL")"
say "mmdebstrap $SUITE with ${PACKAGES[*]}"
# minbase: essential packages plus apt; the hooks drop what a container does not use.
[[ -f "$TARBALL" ]] || mmdebstrap --variant=minbase --format=tar --include="$(IFS=,; echo "${PACKAGES[*]}")" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='rm -f "$1"/etc/machine-id "$1"/var/lib/dbus/machine-id; : >"$1"/etc/machine-id' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  "$SUITE" "$TARBALL.part" "${SOURCES[@]}" >&2
[[ -f "$TARBALL" ]] || mv "$TARBALL.part" "$TARBALL"
# The node image (hack/kind/node/Dockerfile) sets the entrypoint and stop signal; import takes few changes.
"$DOCKER" import --change 'ENV container=docker' --change 'ENTRYPOINT ["/sbin/init"]' "$TARBALL" "$IMAGE" >&2
rm -f "$TARBALL"
say "imported $IMAGE"
echo "$IMAGE"
