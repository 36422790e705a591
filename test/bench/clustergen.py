"""Realistic, adversarial SR-IOV clusters for the benchmarks: varied nodes, NICs and policies.

Why: a benchmark whose nodes share one label set and whose policies share one selector lets every
memo collapse and measures the cheapest path. Here (deterministic for a seed):
- N worker Nodes with varied labels: zone (8), rack (N/40), instance type (6), SR-IOV pool (20),
  hostname; one in 50 is a control-plane node the policies do not select;
- each Node's NodeState reports 2-8 PFs of mixed vendors (Intel XXV710, E810, X710; NVIDIA ConnectX-5,
  ConnectX-6 Dx), 8-128 VFs per PF, from 12 hardware profiles whose PCI buses (and so altNames) differ;
  slot 1 (ens1f0/ens1f1, every node) is always an Intel E810 with 128 VFs;
- P policies with distinct node selectors (pool, pool+zone, or all workers), distinct pfNames VF ranges
  on slot 1 (so peers on the same PF really compare ranges), distinct rootDevices for the all-worker
  ones (checked against every peer), priorities 1-99 and distinct resource names. Every stored policy
  would itself be admitted, and `candidates()` yields further policies that will be: the admission
  benchmark judges allowed creates, the expensive outcome (a denial can stop at the first conflict).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

API = "sriovnetwork.openshift.io/v1"
NS = "sriov-network-operator"
WORKER = "node-role.kubernetes.io/worker"
POOL = "sriov.example.com/pool"
ZONE = "topology.kubernetes.io/zone"
POOLS = 20
ZONES = 8
RANGE_WIDTH = 4  # VFs per pfNames range; 128 / 4 = 32 ranges per (pool, PF)
SLOT1_VFS = 128

#: (vendor, deviceID, driver, totalvfs choices): the supported models of test/support/webhook_objects.py.
MODELS = [
    ("8086", "158b", "i40e", (32, 64)),  # XXV710
    ("8086", "159b", "ice", (64, 128)),  # E810
    ("8086", "1572", "i40e", (8, 32, 64)),  # X710
    ("15b3", "1017", "mlx5_core", (8, 16, 127)),  # ConnectX-5
    ("15b3", "101d", "mlx5_core", (8, 16, 127)),  # ConnectX-6 Dx
]
SUPPORTED_NIC_DATA = {
    "Intel_i40e_XXV710": "8086 158b 154c",
    "Intel_ice_E810-XXVDA2": "8086 159b 1889",
    "Intel_i40e_10G_X710_SFP": "8086 1572 154c",
    "Nvidia_mlx5_ConnectX-5": "15b3 1017 1018",
    "Nvidia_mlx5_ConnectX-6_Dx": "15b3 101d 101e",
}
INSTANCE_TYPES = ["r650", "r750", "r760", "sr650", "dl380", "dl360"]


@dataclass(frozen=True)
class Profile:
    """A hardware SKU: which NIC sits in slots 2.. (slot 1 is always a dual-port E810), on which PCI bus."""

    extra: tuple[tuple[int, int], ...]  # (model index, totalvfs) per extra dual- or single-port card
    buses: tuple[int, ...]


def profiles(seed: int) -> list[Profile]:
    rnd = random.Random(seed)
    out = []
    for _ in range(12):
        cards = rnd.randint(0, 3)  # 0-3 extra cards -> 2..8 PFs with slot 1
        extra = tuple((m := rnd.randrange(len(MODELS)), rnd.choice(MODELS[m][3])) for _ in range(cards))
        out.append(Profile(extra, tuple(rnd.sample(range(0x18, 0xf0), cards + 1))))
    return out


def _iface(slot: int, port: int, bus: int, model: int, totalvfs: int, node_i: int) -> dict[str, Any]:
    vendor, device, driver, _ = MODELS[model]
    return {"name": f"ens{slot}f{port}", "altNames": [f"enp{bus}s0f{port}"],
            "pciAddress": f"0000:{bus:02x}:00.{port}", "vendor": vendor, "deviceID": device, "driver": driver,
            "totalvfs": totalvfs, "numVfs": 0, "mtu": 1500, "linkType": "ETH", "linkSpeed": "25000 Mb/s",
            "mac": f"b4:96:{node_i >> 16 & 255:02x}:{node_i >> 8 & 255:02x}:{node_i & 255:02x}:{slot}{port}"}


class Cluster:
    """N nodes and their NodeStates, P stored policies; deterministic for (nodes, policies, seed)."""

    def __init__(self, nodes: int, policies: int = 200, seed: int = 15, namespace: str = NS) -> None:
        self.n = nodes
        self.p = policies
        self.seed = seed
        self.namespace = namespace
        self._profiles = profiles(seed)
        self._next_range: dict[tuple[str, str], int] = {}
        self._next_root = 0
        self.stored = [self._policy(k) for k in range(policies)]

    # -- nodes and NodeStates ---------------------------------------------------------------------
    def node_name(self, i: int) -> str:
        return f"worker-{i:05d}"

    def labels(self, i: int) -> dict[str, str]:
        name = self.node_name(i)
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", ZONE: f"zone-{i % ZONES}",
                  "example.com/rack": f"rack-{i // 40}", "node.kubernetes.io/instance-type":
                  INSTANCE_TYPES[(i * 7) % len(INSTANCE_TYPES)]}
        if i % 50 == 49:
            labels["node-role.kubernetes.io/control-plane"] = ""
        else:
            labels[WORKER] = ""
            labels[POOL] = f"pool-{i % POOLS}"
        return labels

    def node(self, i: int) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node_name(i), "labels": self.labels(i)},
                "spec": {"providerID": f"baremetal://{self.node_name(i)}"}}

    def interfaces(self, i: int) -> list[dict[str, Any]]:
        prof = self._profiles[(i * 7 + i // 97) % len(self._profiles)]
        out = [_iface(1, port, prof.buses[0], 1, SLOT1_VFS, i) for port in (0, 1)]
        for c, (model, totalvfs) in enumerate(prof.extra):
            ports = 1 if MODELS[model][0] == "15b3" and c % 2 else 2
            out += [_iface(2 + c, port, prof.buses[1 + c], model, totalvfs, i) for port in range(ports)]
        return out

    def node_state(self, i: int) -> dict[str, Any]:
        return {"apiVersion": API, "kind": "SriovNetworkNodeState",
                "metadata": {"name": self.node_name(i), "namespace": self.namespace}, "spec": {},
                "status": {"interfaces": self.interfaces(i), "syncStatus": "Succeeded"}}

    def nodes(self) -> Iterator[dict[str, Any]]:
        return (self.node(i) for i in range(self.n))

    def node_states(self) -> Iterator[dict[str, Any]]:
        return (self.node_state(i) for i in range(self.n))

    # -- policies -----------------------------------------------------------------------------------
    def _policy(self, k: int) -> dict[str, Any]:
        """Policy k: 1 in 10 selects all workers by rootDevices (a distinct slot-1 PCI address of one
        profile); the rest select a pool (every third also a zone) and take the pool's next free VF range
        on ens1f0 or ens1f1, so every peer sharing the pool compares ranges on the same PF."""
        rnd = random.Random(self.seed * 1_000_003 + k)
        spec: dict[str, Any] = {"resourceName": f"res_{k}", "priority": rnd.randint(1, 99), "mtu": 1500,
                                "deviceType": "netdevice", "isRdma": False}
        if k % 10 == 9:
            if self._next_root >= 2 * len(self._profiles):
                raise ValueError("more all-worker policies than distinct slot-1 PCI addresses")
            prof = self._profiles[self._next_root % len(self._profiles)]
            port = self._next_root // len(self._profiles) % 2
            self._next_root += 1
            spec["nodeSelector"] = {WORKER: ""}
            spec["numVfs"] = 8
            spec["nicSelector"] = {"vendor": "8086", "deviceID": "159b",
                                   "rootDevices": [f"0000:{prof.buses[0]:02x}:00.{port}"]}
        else:
            pool_i = (k * 7) % POOLS
            pool = f"pool-{pool_i}"
            selector = {WORKER: "", POOL: pool}
            if k % 3 == 0:  # a zone that shares nodes with the pool (node i: pool i % 20, zone i % 8)
                selector[ZONE] = f"zone-{pool_i % 4 + 4 * (k // 3 % 2)}"
            pf = f"ens1f{k // POOLS % 2}"
            slot = self._next_range.get((pool, pf), 0)
            self._next_range[(pool, pf)] = slot + 1
            first = slot * RANGE_WIDTH
            if first + RANGE_WIDTH > SLOT1_VFS:
                raise ValueError(f"too many policies for pool {pool} {pf}")
            spec["nodeSelector"] = selector
            spec["numVfs"] = SLOT1_VFS
            spec["nicSelector"] = {"pfNames": [f"{pf}#{first}-{first + RANGE_WIDTH - 1}"]}
        return {"apiVersion": API, "kind": "SriovNetworkNodePolicy",
                "metadata": {"name": f"policy-{k:04d}", "namespace": self.namespace}, "spec": spec}

    def candidates(self, count: int) -> list[dict[str, Any]]:
        """Further policies, each of which the webhook admits against the stored ones (not stored)."""
        saved = (dict(self._next_range), self._next_root)
        out = []
        k = self.p
        while len(out) < count:
            if k % 10 != 9:  # the rootDevices kind would collide with a stored one's PCI address
                out.append(self._policy(k))
            k += 1
        self._next_range, self._next_root = saved
        return out
