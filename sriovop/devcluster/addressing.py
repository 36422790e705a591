"""Addresses of a cluster with nodes: pod subnets, Service range, bridge names, the advertise address.

Every node shares the host's network namespace, so two clusters on one machine (or a cluster next to
the demo) must not share a pod subnet, a bridge name or a Service range. A cluster takes the lowest
free slot k (0..255): a claim file under /run/sriovop/clusters/ records which cluster directory holds
it, and a slot whose owner no longer runs, or whose pod range overlaps an address already routed on
the host, is skipped or reclaimed.

Slot k owns the pod range 10.(208 + k // 16).((k % 16) * 16).0/20, one /24 per node (at most 16), and
the Service range 10.96.k.0/24 (the `kubernetes` Service is 10.96.k.1).
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyroute2 import IPRoute

CLAIMS_DIR = Path("/run/sriovop/clusters")
SLOTS = 256
MAX_NODES = 16


class AddressingError(RuntimeError):
    pass


@dataclass(frozen=True)
class NodeNetwork:
    name: str
    subnet: ipaddress.IPv4Network
    bridge: str

    @property
    def gateway(self) -> ipaddress.IPv4Address:
        return self.subnet.network_address + 1


@dataclass(frozen=True)
class ClusterNetwork:
    slot: int
    host_ip: str
    pod_range: ipaddress.IPv4Network
    service_range: ipaddress.IPv4Network
    nodes: tuple[NodeNetwork, ...]

    @property
    def kubernetes_service_ip(self) -> str:
        return str(self.service_range.network_address + 1)

    @property
    def tag(self) -> str:
        """Names this cluster's host objects (iptables chains, cgroups) apart from other clusters'."""
        return f"sriovop-c{self.slot}"

    def to_json(self) -> dict[str, object]:
        return {
            "slot": self.slot, "host_ip": self.host_ip, "pod_range": str(self.pod_range),
            "service_range": str(self.service_range),
            "nodes": [{"name": n.name, "subnet": str(n.subnet), "bridge": n.bridge} for n in self.nodes],
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ClusterNetwork:
        nodes = data["nodes"]
        assert isinstance(nodes, list)
        return cls(
            slot=int(str(data["slot"])), host_ip=str(data["host_ip"]),
            pod_range=ipaddress.IPv4Network(str(data["pod_range"])),
            service_range=ipaddress.IPv4Network(str(data["service_range"])),
            nodes=tuple(NodeNetwork(n["name"], ipaddress.IPv4Network(n["subnet"]), n["bridge"]) for n in nodes),
        )


def node_name(index: int) -> str:
    return f"sriovop-node-{index}"


def plan(slot: int, node_count: int, host_ip: str) -> ClusterNetwork:
    if not 1 <= node_count <= MAX_NODES:
        raise AddressingError(f"--nodes must be between 1 and {MAX_NODES}, got {node_count}")
    pod_range = ipaddress.IPv4Network(f"10.{208 + slot // 16}.{(slot % 16) * 16}.0/20")
    subnets = list(pod_range.subnets(new_prefix=24))
    nodes = tuple(
        NodeNetwork(node_name(i), subnets[i - 1], f"sop{slot}-n{i}") for i in range(1, node_count + 1)
    )
    return ClusterNetwork(slot, host_ip, pod_range, ipaddress.IPv4Network(f"10.96.{slot}.0/24"), nodes)


def host_ip() -> str:
    """The address pods reach kube-apiserver at: the source address of the default route's interface.

    Loopback does not work (in a pod, 127.0.0.1 is the pod itself); any global address of the host is
    reachable from the pod bridges, and the default route's one is the address a real node would have.
    """
    with IPRoute() as ipr:
        routes = ipr.route("get", dst="192.0.2.255")  # any non-local address: the kernel picks the source
        for route in routes:
            src = route.get_attr("RTA_PREFSRC")
            if src and not src.startswith("127."):
                return str(src)
        for addr in ipr.get_addr(family=2):
            ip = addr.get_attr("IFA_ADDRESS")
            if ip and not ip.startswith("127."):
                return str(ip)
    raise AddressingError("no non-loopback IPv4 address on this host: pods could not reach kube-apiserver")


def _routed_networks() -> list[ipaddress.IPv4Network]:
    nets = []
    with IPRoute() as ipr:
        for route in ipr.get_routes(family=2):
            dst = route.get_attr("RTA_DST")
            if dst:
                nets.append(ipaddress.IPv4Network(f"{dst}/{route['dst_len']}", strict=False))
    return nets


def _claim_owner_alive(path: Path, alive: Callable[[int], bool]) -> bool:
    try:
        owner = json.loads(path.read_text())
        return alive(int(owner["pid"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return False


def claim(directory: Path, node_count: int, owner_pid: int, alive: Callable[[int], bool]) -> ClusterNetwork:
    """Take the lowest free slot for the cluster in `directory` (owned by process `owner_pid`)."""
    CLAIMS_DIR.mkdir(parents=True, exist_ok=True)
    ip = host_ip()
    routed = _routed_networks()
    record = json.dumps({"dir": str(directory), "pid": owner_pid})
    for slot in range(SLOTS):
        net = plan(slot, node_count, ip)
        if any(net.pod_range.overlaps(r) or net.service_range.overlaps(r) for r in routed if r.prefixlen > 0):
            continue
        path = CLAIMS_DIR / str(slot)
        if path.exists():
            if _claim_owner_alive(path, alive):
                continue
            path.unlink(missing_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue  # another cluster won the race for this slot
        with os.fdopen(fd, "w") as f:
            f.write(record)
        return net
    raise AddressingError(f"all {SLOTS} cluster address slots under {CLAIMS_DIR} are taken")


def claim_owner(slot: int) -> str | None:
    """The cluster directory holding `slot`, or None when it is free."""
    try:
        return str(json.loads((CLAIMS_DIR / str(slot)).read_text())["dir"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def release(directory: Path, slot: int) -> None:
    path = CLAIMS_DIR / str(slot)
    try:
        if json.loads(path.read_text()).get("dir") == str(directory):
            path.unlink()
    except (FileNotFoundError, ValueError):
        pass
