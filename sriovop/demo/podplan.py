"""What `sriovop demo pod` will do, decided before anything starts: which cluster (bring one up, or
reuse the one running in --dir with its QEMU guest node), which image archives, and the steps in order.
Bad input is refused here, naming the option and the reason, so nothing is half-applied.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

# What the guest node runs: the config daemon, the CNI images its init containers use, the device plugin
# (imported at the guest's boot). The host nodes get these and the operator and webhook.
GUEST_IMAGES = ("config-daemon.tar", "sriov-cni.tar", "ib-sriov-cni.tar", "device-plugin.tar")
HOST_IMAGES = ("operator.tar", "webhook.tar", *GUEST_IMAGES)


class PlanError(ValueError):
    """The demo cannot run with these options; nothing was started."""


class ClusterState(Enum):
    ABSENT = "absent"            # nothing runs in --dir: the demo brings a cluster up
    WITH_GUEST = "with-guest"    # a cluster with its QEMU guest node: reused
    WITHOUT_GUEST = "without-guest"  # a cluster with no guest node: refused


@dataclass(frozen=True)
class PodDemoOptions:
    directory: Path
    nodes: int
    images: Path
    keep: bool
    timeout: float


@dataclass(frozen=True)
class Plan:
    options: PodDemoOptions
    reuse: bool
    guest_images: tuple[Path, ...]
    host_images: tuple[Path, ...]
    steps: tuple[str, ...]

    @property
    def down_command(self) -> str:
        return f"sriovop dev cluster down --dir {self.options.directory}"


def cluster_state(directory: Path, supervisor_alive: bool) -> ClusterState:
    """From `dev cluster up`'s files in `directory`: ready, and a guest node recorded in vm-nodes.json."""
    if not supervisor_alive or not (directory / "ready").exists():
        return ClusterState.ABSENT
    try:
        guests = json.loads((directory / "vm-nodes.json").read_text())
    except (FileNotFoundError, ValueError):
        guests = {}
    return ClusterState.WITH_GUEST if guests else ClusterState.WITHOUT_GUEST


def make_plan(options: PodDemoOptions, state: ClusterState) -> Plan:
    if options.nodes < 1:
        raise PlanError(f"--nodes: expected 1 or more host nodes (the operator runs there), got {options.nodes}")
    if options.timeout <= 0:
        raise PlanError(f"--timeout: expected seconds above 0, got {options.timeout}")
    if state is ClusterState.WITHOUT_GUEST:
        raise PlanError(f"--dir {options.directory}: a cluster without a QEMU guest node runs there; stop it "
                        f"(sriovop dev cluster down --dir {options.directory}) or choose another --dir")
    missing = [name for name in HOST_IMAGES if not (options.images / name).is_file()]
    if missing:
        raise PlanError(f"--images {options.images}: no {', '.join(missing)} (run `make images` first)")
    reuse = state is ClusterState.WITH_GUEST
    steps = [
        f"reuse the cluster in {options.directory}" if reuse else
        f"cluster up: {options.nodes} host node(s) + the QEMU guest node sriovop-vm-1",
        "load the images into the host nodes",
        "deploy the operator (manifests/crds, manifests/)",
        "config daemon Ready on the guest node, its NodeState shows the 82576 PF",
        "policy: 4 netdevice VFs on eth0 -> NodeState Succeeded, openshift.io/igbvfs: 4 allocatable",
        "SriovNetwork (VLAN 100, host-local IPAM) -> NetworkAttachmentDefinition",
        "pod naming the network in its annotation -> Running",
        "read the pod's net1 (in the guest) and its network-status",
    ]
    if not options.keep:
        steps.append("delete the pod, the network and the policy" if reuse else "cluster down (guest included)")
    return Plan(options, reuse, tuple(options.images / n for n in GUEST_IMAGES),
                tuple(options.images / n for n in HOST_IMAGES), tuple(steps))
