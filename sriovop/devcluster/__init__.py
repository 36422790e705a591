"""A local kube-apiserver + etcd on loopback, for the demo and the tests."""

from sriovop.devcluster.binaries import ControlPlaneBinaries, find_binaries
from sriovop.devcluster.controlplane import ControlPlane, ControlPlaneError

__all__ = ["ControlPlane", "ControlPlaneBinaries", "ControlPlaneError", "find_binaries"]
