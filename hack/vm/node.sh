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

step "node paths the operator's DaemonSets mount"
# The device-plugin pod serves in /var/lib/kubelet/device-plugins, the config daemon's init containers
# install their CNI shims into /opt/cni/bin (SRIOV_CNI_BIN_PATH) and its sriov-cni-server container
# listens in /var/run/sriovop/cni and runs IPAM plugins from /opt/cni/bin: the standard paths of a real
# node, bound onto the node's directories so the kubelet, containerd and the attach server see the same.
mkdir -p "$NODE_DIR/cni/bin" /var/lib/kubelet /opt/cni/bin /run/sriovop/cni "$SRIOVOP_CNI_SOCKET_DIR"
mount --bind "$NODE_DIR/kubelet" /var/lib/kubelet
mount --bind "$NODE_DIR/cni/bin" /opt/cni/bin
mount --bind /run/sriovop/cni "$SRIOVOP_CNI_SOCKET_DIR"

step "attach plugin"
for plugin in /usr/lib/cni/*; do ln -s "$plugin" "$NODE_DIR/cni/bin/"; done
# host-local runs inside the sriov-cni-server container too, where a link into /usr/lib/cni dangles.
rm "$NODE_DIR/cni/bin/host-local" && cp /usr/lib/cni/host-local "$NODE_DIR/cni/bin/host-local"
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
# Supervised as a node's service manager would: killing the kubelet ($KUBELET_PID_FILE) restarts it,
# which is how a test restarts the guest's kubelet; the supervisor's own pid is the node's life.
KUBELET_PID_FILE=/run/kubelet.pid
(
  set +e
  while :; do
    "$KUBELET" --config="$J/kubelet.yaml" --kubeconfig="$J/kubeconfig" --hostname-override="$NODE_NAME" \
      --node-ip=10.0.2.15 --root-dir="$NODE_DIR/kubelet" --cert-dir="$NODE_DIR/kubelet/pki" --oom-score-adj=0 \
      >> "$J/kubelet.log" 2>&1 &
    echo "$!" > "$KUBELET_PID_FILE"
    wait "$!"
    echo "SRIOVOP-NODE: kubelet exited ($?), restarting" >> "$J/kubelet.log"
    sleep 1  # a kubelet that cannot start must not spin the guest's only CPU
  done
) &
# The caller sources this script and serves requests (test/support/vm_daemon.py) while $pid lives.
pid=$!
set +eu
