#!/usr/bin/env bash
# Builds the node side of a local cluster from the Go module proxy into a version-keyed cache outside
# the repo: kubelet, kube-controller-manager and kube-scheduler at the kube-apiserver's release (same
# wrapper module as hack/build-control-plane.sh), and crictl.
#
# Usage: hack/build-node-components.sh          (prints the cache directory on its last line)
# Env:   K8S_VERSION (default v1.35.4), CRICTL_VERSION (default v1.34.0: Debian bookworm has no cri-tools
#        package, and the newest release not above the cluster's minor that the module proxy serves),
#        SRIOVOP_NODE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/sriovop/node/$K8S_VERSION)
#
# containerd, runc and the CNI plugins are Debian packages (hack/install-deps.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/k8s-wrapper.sh"

K8S_VERSION=${K8S_VERSION:-v1.35.4}
CRICTL_VERSION=${CRICTL_VERSION:-v1.34.0}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
OUT=${SRIOVOP_NODE_DIR:-$CACHE_ROOT/node/$K8S_VERSION}
COMPONENTS=(kubelet kube-controller-manager kube-scheduler)
k8s_begin "${COMPONENTS[@]}" crictl

missing=()
for c in "${COMPONENTS[@]}"; do [ -x "$OUT/$c" ] || missing+=("$c"); done
if [ ${#missing[@]} -gt 0 ]; then
  k8s_wrapper_module "$W/node" sriovop-node-build
  pkgs=()
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  step "resolving ${missing[*]} at $K8S_VERSION (module download)"
  for p in "${pkgs[@]}"; do go get "$p@${K8S_VERSION}" >&2; done
  step "compiling ${missing[*]} (a few minutes cold; about a minute after kube-apiserver's build)"
  mkdir -p "$W/bin"
  go build -trimpath -ldflags "$K8S_LDFLAGS" -o "$W/bin/" "${pkgs[@]}"
  for c in "${missing[@]}"; do mv "$W/bin/$c" "$OUT/$c"; done
fi
for c in "${COMPONENTS[@]}"; do step "verify: $c $("$OUT/$c" --version)"; done

if [ ! -x "$OUT/crictl" ]; then
  step "building crictl $CRICTL_VERSION"
  mkdir -p "$W/bin"
  GOBIN="$W/bin" go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION#v}" "sigs.k8s.io/cri-tools/cmd/crictl@${CRICTL_VERSION}"
  mv "$W/bin/crictl" "$OUT/crictl"
fi
step "verify: $("$OUT/crictl" --version)"

touch "$OUT/.complete"
step "done: $(du -sh "$OUT" | cut -f1) in $OUT"
echo "$OUT"
