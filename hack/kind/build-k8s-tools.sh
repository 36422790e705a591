#!/usr/bin/env bash
# kubeadm, kube-proxy and kubectl at the cluster's release, from the Go module proxy, in the same wrapper
# module as hack/build-node-components.sh (most packages come from its Go build cache). A kind node runs
# kubeadm and kubectl itself and kube-proxy as a pod.
#
# Usage: hack/kind/build-k8s-tools.sh           (prints the cache directory on its last line)
# Env:   K8S_VERSION (default v1.35.4), SRIOVOP_KIND_TOOLS_DIR (default ${XDG_CACHE_HOME:-~/.cache}/sriovop/kind/$K8S_VERSION)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/k8s-wrapper.sh"

K8S_VERSION=${K8S_VERSION:-v1.35.4}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
OUT=${SRIOVOP_KIND_TOOLS_DIR:-$CACHE_ROOT/kind/$K8S_VERSION}
COMPONENTS=(kubeadm kube-proxy kubectl)
k8s_begin "${COMPONENTS[@]}"

missing=()
for c in "${COMPONENTS[@]}"; do [ -x "$OUT/$c" ] || missing+=("$c"); done
if [ ${#missing[@]} -gt 0 ]; then
  k8s_wrapper_module "$W/tools" sriovop-kind-tools-build
  pkgs=()
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  step "resolving ${missing[*]} at $K8S_VERSION (module download)"
  for p in "${pkgs[@]}"; do go get "$p@${K8S_VERSION}" >&2; done
  step "compiling ${missing[*]}"
  mkdir -p "$W/bin"
  go build -trimpath -ldflags "$K8S_LDFLAGS" -o "$W/bin/" "${pkgs[@]}"
  for c in "${missing[@]}"; do mv "$W/bin/$c" "$OUT/$c"; done
fi
step "verify: kubeadm $("$OUT/kubeadm" version -o short), $("$OUT/kube-proxy" --version), kubectl $("$OUT/kubectl" version --client -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')"

touch "$OUT/.complete"
step "done: $(du -sh "$OUT" | cut -f1) in $OUT"
echo "$OUT"
