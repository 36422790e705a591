#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy into a version-keyed cache outside the repo.
#
# Usage: hack/build-control-plane.sh            (prints the cache directory on its last line)
# Env:   K8S_VERSION (default v1.35.4), ETCD_VERSION (default: the etcd server version that release
#        pins), SRIOVOP_CONTROL_PLANE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/sriovop/control-plane/$K8S_VERSION)
#
# Go ignores a dependency's `replace` directives, and k8s.io/kubernetes points every staging module at
# ./staging with one, so a throwaway wrapper module pins each staging module to its published v0.N.M tag.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.35.4}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
OUT=${SRIOVOP_CONTROL_PLANE_DIR:-$CACHE_ROOT/control-plane/$K8S_VERSION}
START=$(date +%s)

step() { printf '[build-control-plane %4ds] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }

if [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ] && [ -f "$OUT/.complete" ]; then
  step "cached: $OUT"
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null || { echo "build-control-plane: go is not on PATH (Go 1.24+ is needed)" >&2; exit 1; }
mkdir -p "$OUT"
export GOWORK=off GOTOOLCHAIN=${GOTOOLCHAIN:-auto} CGO_ENABLED=0 GOFLAGS=-mod=mod
export GOPATH=${GOPATH:-$CACHE_ROOT/go}
export GOCACHE=${GOCACHE_OVERRIDE:-$CACHE_ROOT/go-build}
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
PATCH=$(echo "$K8S_VERSION" | cut -d. -f3)
STAGING_VER="v0.${MINOR}.${PATCH}"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# --- kube-apiserver -------------------------------------------------------------------------------
if [ ! -x "$OUT/kube-apiserver" ]; then
  mkdir -p "$W/apiserver" && cd "$W/apiserver"
  go mod init local/sriovop-apiserver-build >/dev/null 2>&1
  step "downloading k8s.io/kubernetes@$K8S_VERSION go.mod"
  GOMOD=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  MODS=$(python3 - "$GOMOD" <<'PY'
import re, sys
mods = set()
for line in open(sys.argv[1]):
    s = line.split("//")[0].strip()
    m = re.match(r'^(?:require\s+)?(k8s\.io/[\w.\-/]+)\s+v0\.0\.0$', s)
    if m:
        mods.add(m.group(1))
    m = re.match(r'^(?:replace\s+)?(k8s\.io/[\w.\-/]+)\s+=>\s+\./staging/', s)
    if m:
        mods.add(m.group(1))
print("\n".join(sorted(mods)))
PY
)
  step "pinning $(echo "$MODS" | wc -l) staging modules to $STAGING_VER"
  for m in $MODS; do go mod edit -replace="${m}=${m}@${STAGING_VER}"; done
  step "resolving k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION (module download)"
  go get "k8s.io/kubernetes/cmd/kube-apiserver@${K8S_VERSION}" >&2
  ETCD_PIN=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$GOMOD")
  echo "$ETCD_PIN" > "$W/etcd-pin"
  LDF="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION}"
  LDF="$LDF -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${MINOR}"
  LDF="$LDF -X k8s.io/component-base/version.gitTreeState=clean"
  LDF="$LDF -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION}"
  step "compiling kube-apiserver (the slow part: 10-20 min cold on 2 cores)"
  go build -trimpath -ldflags "$LDF" -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
fi
step "verify: $("$OUT/kube-apiserver" --version)"

# --- etcd -----------------------------------------------------------------------------------------
if [ ! -x "$OUT/etcd" ]; then
  ETCD_VERSION=${ETCD_VERSION:-$(cat "$W/etcd-pin" 2>/dev/null || true)}
  if [ -z "$ETCD_VERSION" ]; then
    GOMOD=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    ETCD_VERSION=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$GOMOD")
  fi
  mkdir -p "$W/etcd" && cd "$W/etcd"
  go mod init local/sriovop-etcd-build >/dev/null 2>&1
  step "resolving go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
  step "compiling etcd $ETCD_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$OUT/etcd.tmp" "$OUT/etcd"
fi
step "verify: $("$OUT/etcd" --version | head -1)"

touch "$OUT/.complete"
step "done: $(du -sh "$OUT" | cut -f1) in $OUT"
echo "$OUT"
