"""The QEMU guest as a kubelet node, for `make e2e-node`: sriovop/devcluster/vmnode.py, the code that
`sriovop dev cluster up --vm-nodes 1` runs (one way to render, boot and join the guest node)."""

from sriovop.devcluster.vmnode import (
    GUEST_IP,
    KUBELET_PID_FILE,
    NODE_DIR,
    NODE_NAME,
    ClusterAccess,
    join,
    keep_logs,
    node_vm,
    start_node,
)

__all__ = ["GUEST_IP", "KUBELET_PID_FILE", "NODE_DIR", "NODE_NAME", "ClusterAccess", "join", "keep_logs", "node_vm",
           "start_node"]
