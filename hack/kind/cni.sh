#!/usr/bin/env bash
# The pod network of a kind cluster without kindnetd (whose image no registry serves here): on every node
# a ptp + host-local CNI config for the node's podCIDR (the reference plugins the node image carries),
# and on every node a route to each other node's podCIDR via that node's address. Idempotent: run again
# after a node was restarted or reattached to its network (its routes went with its interface).
#
# Usage: hack/kind/cni.sh CLUSTER KUBECONFIG
# Env:   KUBECTL (default kubectl), DOCKER (default docker), KIND (default kind)
set -euo pipefail

CLUSTER=${1:?cluster name}
KUBECONFIG_FILE=${2:?kubeconfig}
KUBECTL=${KUBECTL:-kubectl}
DOCKER=${DOCKER:-docker}
KIND=${KIND:-kind}

say() { printf '[kind-cni] %s\n' "$*" >&2; }
kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

pod_cidr() { # the node's podCIDR, once the controller-manager has allocated it
  local node=$1 cidr="" i
  for ((i = 0; i < 240; i++)); do
    cidr=$(kc get node "$node" -o jsonpath='{.spec.podCIDR}' 2>/dev/null || true)
    [[ -n "$cidr" ]] && { echo "$cidr"; return; }
    sleep 0.5
  done
  say "node $node has no podCIDR after 120 s"; return 1
}

address() { # the node's address on its (kind's) network; empty while it is disconnected
  "$DOCKER" inspect -f '{{range $name, $net := .NetworkSettings.Networks}}{{$net.IPAddress}} {{end}}' "$1" |
    awk '{print $1}'
}

conflist() {
  cat <<JSON
{
  "cniVersion": "0.4.0",
  "name": "kind-ptp",
  "plugins": [
    {"type": "ptp", "ipMasq": false, "mtu": 1500,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$1"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
}

mapfile -t NODES < <("$KIND" get nodes --name "$CLUSTER")
[[ ${#NODES[@]} -gt 0 ]] || { say "no nodes in kind cluster $CLUSTER"; exit 1; }
declare -A CIDR ADDR
for n in "${NODES[@]}"; do
  CIDR[$n]=$(pod_cidr "$n")
  ADDR[$n]=$(address "$n")
done
for n in "${NODES[@]}"; do
  [[ -n "${ADDR[$n]}" ]] || { say "$n is not on its network: skipped"; continue; }
  conflist "${CIDR[$n]}" | "$DOCKER" exec -i "$n" sh -c 'mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/10-kind-ptp.conflist'
  for m in "${NODES[@]}"; do
    [[ "$m" == "$n" || -z "${ADDR[$m]}" ]] && continue
    "$DOCKER" exec "$n" ip route replace "${CIDR[$m]}" via "${ADDR[$m]}"
  done
  say "$n: ${CIDR[$n]} at ${ADDR[$n]}"
done
