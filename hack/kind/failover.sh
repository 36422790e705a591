#!/usr/bin/env bash
# Leader-election failover of the operator on a kind cluster (docs/kind.md): one control plane and
# WORKERS workers, kube-proxy and a ptp pod network (no registry needed), our images loaded with `kind load
# image-archive`, manifests/ applied unchanged, then the fault matrix of hack/kind/failover_matrix.py
# against the leader operator pod: its pod deleted, its node killed, paused, cut from the network, its
# kubelet stopped. One JSON line per fault on stdout, then the report; progress on stderr.
#
#   hack/kind/failover.sh                                  # the node image built here (make kind-node-image)
#   KIND_NODE_IMAGE=kindest/node:v1.35.N hack/kind/failover.sh   # the stock image, where a registry is reachable
#
# hack/kind/install-deps.sh runs first (Debian packages, a Docker engine); a dockerd it started is stopped
# again at the end. The cluster is deleted at the end, also on failure or Ctrl-C (KEEP_CLUSTER=1 keeps it). While it runs,
# `kind get nodes --name $CLUSTER` lists it. Where the machine's capability bounding set is reduced, kind
# runs with hack/kind/docker-wrapper first on PATH (see that file); elsewhere nothing is wrapped.
#
# Env: CLUSTER (sriovop-failover), WORKERS (2), K8S_VERSION (v1.35.4), KIND_NODE_IMAGE
#      (sriovop/kind-node:$K8S_VERSION), NETWORK (sriovop-kind: created with SUBNET if missing, so a node can be
#      reattached at its address), SUBNET (172.29.0.0/16), IMAGES_DIR (build/images: `make images`),
#      IMAGES (the archives loaded: "operator webhook config-daemon"),
#      FAULTS (comma-separated, default all five), WORK (a new temporary directory), PYTHON (.venv/bin/python),
#      KIND, KUBECTL (found on PATH or in the build cache), KEEP_CLUSTER (0).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/hack/kind"
CLUSTER=${CLUSTER:-sriovop-failover}
WORKERS=${WORKERS:-2}
K8S_VERSION=${K8S_VERSION:-v1.35.4}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-sriovop/kind-node:$K8S_VERSION}
NETWORK=${NETWORK:-sriovop-kind}
SUBNET=${SUBNET:-172.29.0.0/16}
IMAGES_DIR=${IMAGES_DIR:-$REPO/build/images}
# What manifests/ runs here: no SR-IOV node policy is applied, so no device plugin or CNI stand-in pod.
IMAGES=${IMAGES:-operator webhook config-daemon}
FAULTS=${FAULTS:-delete_pod,node_killed,node_paused,node_disconnected,kubelet_stopped}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
WORK=${WORK:-$(mktemp -d -t sriovop-kind-failover.XXXXXX)}
STARTED=$(date +%s)
CREATED_NETWORK=0

log() { printf '[kind-failover %5ss] %s\n' "$(($(date +%s) - STARTED))" "$*" >&2; }
die() { log "error: $*"; exit 1; }
find_tool() { # NAME CACHED_PATH: the tool on PATH, else the one the build scripts left in the cache
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"; elif [[ -x "$2" ]]; then echo "$2"; else return 1; fi
}

KIND=${KIND:-$(find_tool kind "$CACHE/kind/bin/kind")} || die "kind not found: make kind-bin (or https://kind.sigs.k8s.io)"
KUBECTL=${KUBECTL:-$(find_tool kubectl "$CACHE/kind/$K8S_VERSION/kubectl")} || die "kubectl not found: make kind-tools"
export KUBECTL KIND
KUBECONFIG_FILE="$WORK/kubeconfig"
kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# A reduced capability bounding set (some sandboxed VMs lack CAP_SYS_RESOURCE) breaks `docker run
# --privileged`; kind then runs with the wrapper first on PATH. Nothing else sees it.
full_bounding_set() {
  local last bnd
  last=$(cat /proc/sys/kernel/cap_last_cap)
  bnd=$((16#${SRIOVOP_CAPBND:-$(awk '/^CapBnd:/ {print $2}' /proc/self/status)}))
  (( bnd == (1 << (last + 1)) - 1 ))
}
if full_bounding_set; then
  kind_() { "$KIND" "$@"; }
else
  log "the capability bounding set is reduced: kind runs with hack/kind/docker-wrapper/docker"
  kind_() { PATH="$HERE/docker-wrapper:$PATH" "$KIND" "$@"; }
fi

cleanup() {
  local rc=$? paused
  trap - EXIT INT TERM
  if [[ "$KEEP_CLUSTER" != 1 ]]; then
    # A paused container cannot be removed: unpause whatever a fault left paused.
    paused=$(docker ps -q --filter "label=io.x-k8s.kind.cluster=$CLUSTER" --filter status=paused || true)
    [[ -n "$paused" ]] && docker unpause $paused >/dev/null 2>&1 || true
    log "deleting kind cluster $CLUSTER"
    "$KIND" delete cluster --name "$CLUSTER" >&2 || true
    if [[ "$CREATED_NETWORK" == 1 ]]; then docker network rm "$NETWORK" >/dev/null 2>&1 || true; fi
    # A dockerd that hack/kind/install-deps.sh started (here or in `make kind-node-image`) is stopped
    # again; one that was running before is not touched.
    bash "$HERE/install-deps.sh" --stop || true
  else
    log "kept kind cluster $CLUSTER (kubeconfig $KUBECONFIG_FILE)"
  fi
  log "work directory: $WORK (total ${SECONDS}s)"
  exit "$rc"
}

cluster_config() {
  local i
  cat <<EOF2
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  disableDefaultCNI: true       # kindnetd's image needs a registry: hack/kind/cni.sh writes a ptp config
nodes:
  - role: control-plane
EOF2
  for ((i = 0; i < WORKERS; i++)); do echo "  - role: worker"; done
  cat <<'EOF2'
kubeadmConfigPatches:
  # Nothing pulls: preflight stays skipped (the list replaces kind's own), and no CoreDNS (no image here;
  # the operator reaches the API server by the kubernetes Service's ClusterIP, no DNS involved).
  - |
    kind: InitConfiguration
    skipPhases: [preflight, addon/coredns]
  # Kubernetes 1.35's kubelet refuses cgroup v1 unless told otherwise; harmless on cgroup v2.
  - |
    kind: KubeletConfiguration
    failCgroupV1: false
EOF2
}

main() {
  [[ -x "$PYTHON" ]] || die "$PYTHON not found: run 'make venv' or set PYTHON"
  mkdir -p "$WORK"
  trap cleanup EXIT
  trap 'log "interrupted"; exit 130' INT TERM
  # docker.io and mmdebstrap when missing, and a Docker engine (started here when none answers; the
  # cleanup stops it again).
  bash "$HERE/install-deps.sh"
  docker image inspect "$KIND_NODE_IMAGE" >/dev/null 2>&1 || [[ "$KIND_NODE_IMAGE" != sriovop/* ]] ||
    die "$KIND_NODE_IMAGE is not built: run 'make kind-node-image'"
  if ! docker network inspect "$NETWORK" >/dev/null 2>&1; then
    docker network create --driver bridge --subnet "$SUBNET" "$NETWORK" >/dev/null
    CREATED_NETWORK=1
  fi
  export KIND_EXPERIMENTAL_DOCKER_NETWORK="$NETWORK"
  cluster_config >"$WORK/cluster.yaml"
  log "creating kind cluster $CLUSTER (1 control plane, $WORKERS workers) from $KIND_NODE_IMAGE"
  kind_ create cluster --name "$CLUSTER" --image "$KIND_NODE_IMAGE" --config "$WORK/cluster.yaml" \
    --kubeconfig "$KUBECONFIG_FILE" --wait 0s >&2
  log "kind get nodes: $(kind_ get nodes --name "$CLUSTER" | tr '\n' ' ')"
  bash "$HERE/cni.sh" "$CLUSTER" "$KUBECONFIG_FILE"
  kc wait --for=condition=Ready node --all --timeout=600s >&2
  log "nodes Ready; loading $IMAGES from $IMAGES_DIR"
  local image
  for image in $IMAGES; do
    [[ -f "$IMAGES_DIR/$image.tar" ]] || die "$IMAGES_DIR/$image.tar is missing: run 'make images'"
    kind_ load image-archive --name "$CLUSTER" "$IMAGES_DIR/$image.tar" >&2
  done
  log "applying manifests/crds and manifests/"
  kc apply -k "$REPO/manifests/crds" >&2
  kc wait --for condition=established --timeout=120s crd --all >&2
  kc apply -k "$REPO/manifests" >&2
  kc -n sriov-network-operator rollout status deployment/sriov-network-operator --timeout=600s >&2
  log "faults: $FAULTS"
  local rc=0
  "$PYTHON" "$HERE/failover_matrix.py" --cluster "$CLUSTER" --network "$NETWORK" --kubeconfig "$KUBECONFIG_FILE" \
    --work "$WORK" --faults "$FAULTS" | tee "$WORK/faults.jsonl" || rc=$?
  log "done in $(($(date +%s) - STARTED)) s"
  return "$rc"
}

# Sourcing the script (for a dry test of its functions) defines them without running anything.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
