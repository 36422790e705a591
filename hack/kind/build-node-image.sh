#!/usr/bin/env bash
# A kind node image built without a registry (docs/kind.md):
#   1. the Kubernetes binaries from the Go module proxy (cached): kube-apiserver and etcd
#      (hack/build-control-plane.sh), kubelet, kube-controller-manager, kube-scheduler and crictl
#      (hack/build-node-components.sh), kubeadm, kube-proxy and kubectl (hack/kind/build-k8s-tools.sh);
#   2. the Debian base image (hack/kind/build-base-image.sh: systemd, containerd, runc, CNI plugins);
#   3. the build context (hack/kind/node_image.py): the node's files (hack/kind/node/files), the binaries,
#      /kind/version, and the component images kubeadm names (`kubeadm config images list`) as OCI
#      archives, imported into containerd when the node boots (CoreDNS is not built: see node_image.py);
#   4. `docker build` (classic builder, FROM the local base image: nothing is pulled).
# The image carries a label with a hash of everything it is made from; an unchanged input reuses it.
#
# Usage: hack/kind/build-node-image.sh [--dry-run]   (prints the image name on its last line; --dry-run
#        prints the plan as JSON and builds only the missing binaries)
# Env:   K8S_VERSION (default v1.35.4), KIND_NODE_IMAGE (default sriovop/kind-node:$K8S_VERSION), PYTHON,
#        DOCKER (default docker)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export K8S_VERSION=${K8S_VERSION:-v1.35.4}
IMAGE=${KIND_NODE_IMAGE:-sriovop/kind-node:$K8S_VERSION}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
DOCKER=${DOCKER:-docker}
DRY_RUN=0
[[ "${1:-}" == "--dry-run" ]] && DRY_RUN=1
START=$(date +%s)
say() { printf '[kind-node-image %4ds] %s\n' "$(($(date +%s) - START))" "$*" >&2; }

CP=$(bash "$REPO/hack/build-control-plane.sh" | tail -n1)
NODE=$(bash "$REPO/hack/build-node-components.sh" | tail -n1)
TOOLS=$(bash "$REPO/hack/kind/build-k8s-tools.sh" | tail -n1)
W=$(mktemp -d -t sriovop-kind-node.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$TOOLS/kubeadm" config images list --kubernetes-version "$K8S_VERSION" >"$W/images.txt"
ARGS=(--images-list "$W/images.txt" --bin-dir "$CP" --bin-dir "$NODE" --bin-dir "$TOOLS" --kubernetes-version "$K8S_VERSION")
if [[ "$DRY_RUN" == 1 ]]; then
  "$PYTHON" "$REPO/hack/kind/node_image.py" plan "${ARGS[@]}"
  exit 0
fi

BASE=$(bash "$REPO/hack/kind/build-base-image.sh" | tail -n1)
KEY=$( { echo "$BASE"; cat "$W/images.txt"
         sha256sum "$CP"/kube-apiserver "$CP"/etcd "$NODE"/kubelet "$NODE"/kube-controller-manager \
           "$NODE"/kube-scheduler "$NODE"/crictl "$TOOLS"/kubeadm "$TOOLS"/kube-proxy "$TOOLS"/kubectl | cut -d' ' -f1
         cd "$REPO" && find hack/kind/node hack/kind/node_image.py hack/pause sriovop/devcluster/images/oci.py -type f |
           LC_ALL=C sort | xargs sha256sum; } | sha256sum | cut -c1-16)
if [[ "$("$DOCKER" image inspect -f '{{index .Config.Labels "sriovop.kind.key"}}' "$IMAGE" 2>/dev/null || true)" == "$KEY" ]]; then
  say "cached: $IMAGE"
  echo "$IMAGE"
  exit 0
fi
say "build context (component images as OCI archives)"
"$PYTHON" "$REPO/hack/kind/node_image.py" context "${ARGS[@]}" --out "$W/context" >"$W/plan.json"
say "docker build $IMAGE from $BASE"
DOCKER_BUILDKIT=0 "$DOCKER" build -q --build-arg "BASE_IMAGE=$BASE" --label "sriovop.kind.key=$KEY" \
  -t "$IMAGE" "$W/context" >&2
say "done: $IMAGE ($("$DOCKER" image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d MB", $1/1e6}'))"
echo "$IMAGE"
