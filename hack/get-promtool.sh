#!/usr/bin/env bash
# Puts Prometheus' promtool into a version-keyed cache outside the repository, so the monitoring test runs
# `promtool check rules` and `promtool test rules` on manifests/monitoring.
#
# Usage: hack/get-promtool.sh            (prints the cache directory, which holds `promtool`, on its last line)
# Env:   SRIOVOP_PROMTOOL_DIR (default ${XDG_CACHE_HOME:-~/.cache}/sriovop/promtool/debian-<version>)
#
# promtool comes out of Debian's `prometheus` package, unpacked with dpkg-deb and never installed (no
# service, no dependencies). Building it from the Go module proxy instead compiles the cloud SDKs of
# Prometheus' service discovery: close to an hour cold on two cores, against seconds for the package.
set -euo pipefail

CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
version() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
VERSION=$(version)
if [[ -z "$VERSION" || "$VERSION" == "(none)" ]]; then
  # A fresh machine may have no package lists yet; only root can fetch them.
  if [[ $EUID -eq 0 ]]; then apt-get update -qq >&2; VERSION=$(version); fi
fi
[[ -n "$VERSION" && "$VERSION" != "(none)" ]] || {
  echo "get-promtool: Debian's prometheus package is not known to apt (run apt-get update as root)" >&2; exit 1; }
OUT=${SRIOVOP_PROMTOOL_DIR:-$CACHE_ROOT/promtool/debian-${VERSION//[^A-Za-z0-9.+-]/_}}

if [[ ! -x "$OUT/promtool" ]]; then
  W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
  chmod 0777 "$W"  # apt-get download writes as its sandbox user when run as root
  echo "get-promtool: downloading prometheus $VERSION from Debian" >&2
  (cd "$W" && apt-get download -qq "prometheus=$VERSION" >&2)
  dpkg-deb -x "$W"/prometheus_*.deb "$W/root"
  mkdir -p "$OUT"
  install -m 0755 "$W/root/usr/bin/promtool" "$OUT/promtool.tmp"
  mv "$OUT/promtool.tmp" "$OUT/promtool"
  echo "get-promtool: $("$OUT/promtool" --version 2>&1 | head -1)" >&2
fi
echo "$OUT"
