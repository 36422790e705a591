"""What `sriovop metrics-exporter` serves: upstream's sriov-network-metrics-exporter series.

- `sriov_vf_<counter>{pf, vf, pciAddr, numa_node}` for every VF of every SR-IOV PF (counters read at
  scrape time, netlink then sysfs, as the config daemon's endpoint reads them: host/vfstats.py);
  `numa_node` is the PF's, empty when the platform reports none (-1);
- `sriov_kubepoddevice{pciAddr, dev_type, pod, namespace, container} 1` for every PCI device the
  kubelet's pod-resources API (`List`) says a container holds: joined on `pciAddr`, it names the pod
  behind each VF's traffic (upstream's PrometheusRule does exactly that join);
- `sriovop_metrics_exporter_pod_resources_up` 1 when the last `List` answered, 0 when it failed (the
  error is logged), so a broken kubelet socket shows up as a value rather than as missing series.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

import structlog

from sriovop.host.paths import HostPaths
from sriovop.host.vfmetrics import HELP, VfStatsCollector
from sriovop.host.vfstats import COUNTERS, list_vfs
from sriovop.kubelet.channel import KubeletApiError
from sriovop.kubelet.podresources import PodResources, list_pod_resources

log = structlog.get_logger(__name__)

PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d$")
VF_LABELS = ("pf", "vf", "pciAddr", "numa_node")
POD_DEVICE_LABELS = ("pciAddr", "dev_type", "pod", "namespace", "container")
UP_METRIC = "sriovop_metrics_exporter_pod_resources_up"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _series(name: str, labels: tuple[str, ...], values: tuple[str, ...], value: int | float) -> str:
    text = ",".join(f'{k}="{_escape(v)}"' for k, v in zip(labels, values, strict=True))
    return f"{name}{{{text}}} {value}"


def pod_devices(pods: list[PodResources]) -> list[tuple[str, str, str, str, str]]:
    """(pciAddr, dev_type, pod, namespace, container) for every PCI-address device id, sorted."""
    out = set()
    for pod in pods:
        for container in pod.containers:
            for devices in container.devices:
                for dev in devices.device_ids:
                    if PCI_ADDRESS.match(dev):
                        out.add((dev, devices.resource_name, pod.name, pod.namespace, container.name))
    return sorted(out)


class ExporterCollector:
    def __init__(self, paths: HostPaths, *, kubelet_socket: Path | None,
                 sources: tuple[str, ...] = ("netlink", "sysfs"),
                 list_pods: Callable[[Path], list[PodResources]] | None = None, timeout: float = 10.0,
                 netns: Callable[[], str | None] = lambda: None) -> None:
        self.paths = paths
        #: The namespace of the host's netdevs (the command's kernel access says; None: this process's).
        self._netns = netns
        self.kubelet_socket = kubelet_socket
        self.timeout = timeout
        self._list = list_pods or (lambda sock: list_pod_resources(sock, timeout=self.timeout))
        self.vfs = VfStatsCollector(paths, node="", netns=self._netns, sources=sources)
        self._lock = threading.Lock()

    def _numa_node(self, pf_pci: str) -> str:
        try:
            value = (self.paths.device(pf_pci) / "numa_node").read_text().strip()
        except OSError:
            return ""
        return "" if value in ("", "-1") else value

    def render(self) -> str:
        with self._lock:
            lines = self._vf_lines()
            if self.kubelet_socket is not None:
                lines += self._pod_lines(self.kubelet_socket)
            return "\n".join(lines) + "\n"

    def _vf_lines(self) -> list[str]:
        samples = self.vfs.samples()
        pf_of = {vf.pci: vf.pf_pci for vf in list_vfs(self.paths)}
        numa: dict[str, str] = {}
        lines: list[str] = []
        for counter in COUNTERS:
            name = f"sriov_vf_{counter}"
            lines.append(f"# HELP {name} {HELP[counter]}")
            lines.append(f"# TYPE {name} counter")
            for (pf_name, index, pci, _node), stats in samples:
                if counter not in stats:
                    continue
                pf_pci = pf_of.get(pci, "")
                if pf_pci not in numa:
                    numa[pf_pci] = self._numa_node(pf_pci) if pf_pci else ""
                lines.append(_series(name, VF_LABELS, (pf_name, index, pci, numa[pf_pci]), stats[counter]))
        return lines

    def _pod_lines(self, socket: Path) -> list[str]:
        lines = [f"# HELP {UP_METRIC} 1 when the kubelet's pod-resources List answered at this scrape",
                 f"# TYPE {UP_METRIC} gauge"]
        try:
            pods = self._list(socket)
        except KubeletApiError as exc:
            log.warning("pod-resources List failed; no sriov_kubepoddevice series this scrape",
                        socket=str(socket), error=str(exc))
            return [*lines, f"{UP_METRIC} 0"]
        lines.append(f"{UP_METRIC} 1")
        lines.append("# HELP sriov_kubepoddevice A PCI device (VF) held by a container, from the kubelet's "
                     "pod-resources API")
        lines.append("# TYPE sriov_kubepoddevice counter")
        lines.extend(_series("sriov_kubepoddevice", POD_DEVICE_LABELS, row, 1) for row in pod_devices(pods))
        return lines

    def close(self) -> None:
        self.vfs.close()
