#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy into a version-keyed cache outside the repo.
#
# Usage: hack/build-control-plane.sh            (prints the cache directory on its last line)
# Env:   K8S_VERSION (default v1.35.4), ETCD_VERSION (default: the etcd server version that release
#        pins), SRIOVOP_CONTROL_PLANE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/sriovop/control-plane/$K8S_VERSION)
#
# The Go environment and the wrapper module (staging modules pinned to their published tags) come from
# hack/lib/k8s-wrapper.sh, shared with hack/build-node-components.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/k8s-wrapper.sh"

K8S_VERSION=${K8S_VERSION:-v1.35.4}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
OUT=${SRIOVOP_CONTROL_PLANE_DIR:-$CACHE_ROOT/control-plane/$K8S_VERSION}
k8s_begin kube-apiserver etcd

# --- kube-apiserver -------------------------------------------------------------------------------
if [ ! -x "$OUT/kube-apiserver" ]; then
  k8s_wrapper_module "$W/apiserver" sriovop-apiserver-build
  step "resolving k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION (module download)"
  go get "k8s.io/kubernetes/cmd/kube-apiserver@${K8S_VERSION}" >&2
  ETCD_PIN=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$K8S_GOMOD")
  echo "$ETCD_PIN" > "$W/etcd-pin"
  step "compiling kube-apiserver (the slow part: 10-20 min cold on 2 cores)"
  go build -trimpath -ldflags "$K8S_LDFLAGS" -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
fi
step "verify: $("$OUT/kube-apiserver" --version)"

# --- etcd -----------------------------------------------------------------------------------------
if [ ! -x "$OUT/etcd" ]; then
  ETCD_VERSION=${ETCD_VERSION:-$(cat "$W/etcd-pin" 2>/dev/null || true)}
  if [ -z "$ETCD_VERSION" ]; then
    ETCD_VERSION=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$(k8s_kubernetes_gomod)")
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
