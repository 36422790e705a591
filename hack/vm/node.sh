#!/bin/sh
# The guest's command when it joins a cluster as a kubelet node (test/support/vm_node.py writes the job).
#
# The job share (/run/job) holds what the host rendered with the same modules as the host's nodes
# (sriovop/devcluster/containerd.py, kubelet.py): containerd.toml, kubelet.yaml, the CNI conflist, the
# node's kubeconfig and client CA, and `env` with NODE_DIR, SERVICE_IP, POD_SUBNET, IMAGES (archives on
# the host root, visible over 9p), KUBELET and the apiserver forward (APISERVER_FWD=10.0.2.100:6443).
# The attach plugin (sriovop/devcluster/attach.py) comes as the shim `sriovop-attach`, `attach.conflist`
# (first in the conf dir, wrapping the bridge conflist), its kubeconfig, and ATTACH_SERVER (the
# cni-server command, run with the host's Python over 9p); containerd inherits SRIOVOP_CNI_SOCKET_DIR.
#
# Networking stays explicit: the only way out of the guest is the apiserver forward, and the only
# Service the guest routes is the `kubernetes` ClusterIP (SERVICE_IP:443 DNAT to the forward), for
# host-network pods (OUTPUT) and bridge pods (PREROUTING, then masqueraded out of mgmt0).
# Sourced by the guest's command after kernel-prep.sh; the command then serves shell requests while the kubelet ($pid) runs.
# Logs go to the job share (containerd.log, kubelet.log); "SRIOVOP-NODE: <step>" lines mark progress.
set -eu
step() { echo "SRIOVOP-NODE: $*"; }
J=/run/job

step "node filesystem and service routes"
# containerd's root (snapshots) on a fresh tmpfs: overlayfs upper directories cannot sit on the root overlay.
mkdir -p "$NODE_DIR"
mount -t tmpfs -o mode=0755 nodefs "$NODE_DIR"
mkdir -p "$NODE_DIR/cni/net.d" "$NODE_DIR/kubelet"
cp "$J/cni.conflist" "$NODE_DIR/cni/net.d/10-sriovop-bridge.conflist"

step "attach plugin"
mkdir -p "$NODE_DIR/cni/bin"
for plugin in /usr/lib/cni/*; do ln -s "$plugin" "$NODE_DIR/cni/bin/"; done
install -m 0755 "$J/sriovop-attach" "$NODE_DIR/cni/bin/sriovop-attach"
cp "$J/attach.conflist" "$NODE_DIR/cni/net.d/00-sriovop-attach.conflist"
eval "$ATTACH_SERVER" > "$J/sriovop-attach.log" 2>&1 &
i=0
until [ -S "$SRIOVOP_CNI_SOCKET_DIR/sriovop-attach.sock" ]; do
  i=$((i + 1)); [ "$i" -lt 600 ] || { step "the attach server did not listen"; exit 1; }
  sleep 0.5
done

fwd_host=${APISERVER_FWD%:*} fwd_port=${APISERVER_FWD#*:}
iptables -t nat -A OUTPUT -d "$SERVICE_IP" -p tcp --dport 443 -j DNAT --to-destination "$APISERVER_FWD"
iptables -t nat -A PREROUTING -d "$SERVICE_IP" -p tcp --dport 443 -j DNAT --to-destination "$APISERVER_FWD"
iptables -t nat -A POSTROUTING -s "$POD_SUBNET" -d "$fwd_host" -p tcp --dport "$fwd_port" -o mgmt0 -j MASQUERADE

step "containerd"
containerd --config "$J/containerd.toml" > "$J/containerd.log" 2>&1 &
sock="$NODE_DIR/containerd.sock"
i=0
until ctr --address "$sock" version > /dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -lt 600 ] || { step "containerd did not serve"; exit 1; }
  sleep 0.5
done
for archive in $IMAGES; do
  step "import $archive"
  ctr --address "$sock" -n k8s.io images import "$archive" > /dev/null
done
step "images imported"

step "kubelet"
"$KUBELET" --config="$J/kubelet.yaml" --kubeconfig="$J/kubeconfig" --hostname-override="$NODE_NAME" \
  --node-ip=10.0.2.15 --root-dir="$NODE_DIR/kubelet" --cert-dir="$NODE_DIR/kubelet/pki" --oom-score-adj=0 \
  > "$J/kubelet.log" 2>&1 &
# The caller sources this script and serves requests (test/support/vm_daemon.py) while $pid lives.
pid=$!
set +eu
