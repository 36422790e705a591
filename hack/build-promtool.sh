#!/usr/bin/env bash
# Builds Prometheus' promtool from the Go module proxy into a version-keyed cache outside the repository,
# so the monitoring test runs `promtool check rules` and `promtool test rules` on manifests/monitoring.
#
# Usage: hack/build-promtool.sh            (prints the cache directory, which holds `promtool`, on its last line)
# Env:   PROMETHEUS_VERSION (default v0.305.0, the Go module tag of Prometheus 3.5),
#        SRIOVOP_PROMTOOL_DIR (default ${XDG_CACHE_HOME:-~/.cache}/sriovop/promtool/$PROMETHEUS_VERSION)
#
# `go install github.com/prometheus/prometheus/cmd/promtool@VERSION` is refused because Prometheus' go.mod
# has a replace directive, so a throwaway wrapper module requires it and repeats that directive (the
# cached check, step() and the Go environment come from hack/lib/k8s-wrapper.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/k8s-wrapper.sh"

PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.305.0}
K8S_VERSION=${K8S_VERSION:-v1.35.4}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
OUT=${SRIOVOP_PROMTOOL_DIR:-$CACHE_ROOT/promtool/$PROMETHEUS_VERSION}
k8s_begin promtool

mkdir -p "$W/promtool" && cd "$W/promtool"
go mod init local/sriovop-promtool-build >/dev/null 2>&1
step "downloading github.com/prometheus/prometheus@$PROMETHEUS_VERSION go.mod"
PROM_GOMOD=$(go mod download -json "github.com/prometheus/prometheus@${PROMETHEUS_VERSION}" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
# Prometheus' own replace directives (single-line `replace A [V] => B V`), applied to the wrapper.
python3 - "$PROM_GOMOD" <<'PY' | while read -r r; do go mod edit -replace="$r"; done
import re, sys
for line in open(sys.argv[1]):
    m = re.match(r'^\s*(?:replace\s+)?(\S+)(?:\s+(v\S+))?\s+=>\s+(\S+)\s+(v\S+)\s*$', line.split("//")[0])
    if m:
        old = m.group(1) + ("@" + m.group(2) if m.group(2) else "")
        print(f"{old}={m.group(3)}@{m.group(4)}")
PY
step "resolving github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION (module download)"
go get "github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION}" >&2
step "compiling promtool (cold: 58 min measured on 2 busy shared cores; it pulls in the cloud SDKs of service discovery)"
go build -trimpath -ldflags "-s -w" -o "$OUT/promtool.tmp" github.com/prometheus/prometheus/cmd/promtool
mv "$OUT/promtool.tmp" "$OUT/promtool"
step "verify: $("$OUT/promtool" --version 2>&1 | head -1)"
touch "$OUT/.complete"
echo "$OUT"
