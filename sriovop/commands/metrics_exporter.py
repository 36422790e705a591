"""`sriovop metrics-exporter`: per-VF counters and the pod holding each VF, for Prometheus."""

from __future__ import annotations

from pathlib import Path

import click

from sriovop.commands._host_kernel import kernel_access, simulated_host_option
from sriovop.commands._options import log_options
from sriovop.lazylog import lazy_logger
from sriovop.stopsignals import stop_on_signals

log = lazy_logger(__name__)

SYS_BUS_PCI = "sys/bus/pci/devices"


def _root_of(sysbuspci: str) -> Path:
    path = Path(sysbuspci.rstrip("/") or "/")
    if path.parts[-4:] != tuple(SYS_BUS_PCI.split("/")):
        raise click.BadParameter(f"{sysbuspci!r}: must end in {SYS_BUS_PCI} (e.g. /host/{SYS_BUS_PCI})",
                                 param_hint="--path.sysbuspci")
    root = path.parents[3]
    if not path.is_dir():
        raise click.BadParameter(f"{sysbuspci!r} is not a directory", param_hint="--path.sysbuspci")
    return root


def _truthy(value: str) -> bool:
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise click.BadParameter(f"{value!r}: expected true or false", param_hint="--collector.kubepoddevice")


@click.command()
@click.option("--web.listen-address", "listen", default=":9808", show_default=True,
              help="host:port (or :port) serving /metrics. The operator renders 127.0.0.1:<port> behind "
                   "kube-rbac-proxy, or the node's IP without it.")
@click.option("--path.sysbuspci", "sysbuspci", default="/sys/bus/pci/devices", show_default=True,
              help="The host's sys/bus/pci/devices (in the DaemonSet: /host/sys/bus/pci/devices).")
@simulated_host_option("the root of --path.sysbuspci")
@click.option("--path.sysclassnet", "sysclassnet", default="/sys/class/net", show_default=True,
              help="Accepted for upstream compatibility; netdevs are found through --path.sysbuspci.")
@click.option("--path.kubeletsocket", "kubelet_socket", default="/var/lib/kubelet/pod-resources/kubelet.sock",
              show_default=True, help="The kubelet's pod-resources socket (gRPC, v1.PodResourcesLister/List).")
@click.option("--collector.kubepoddevice", "kubepoddevice", default="false", show_default=True,
              help="true: serve sriov_kubepoddevice (which pod holds which VF) from the pod-resources API.")
@click.option("--collector.vfstatspriority", "priority", default="netlink,sysfs", show_default=True,
              help="Where VF counters are read first: netlink (IFLA_VF_STATS), sysfs, or both in order.")
@click.option("--node-name", envvar="NODE_NAME", default="", help="For logs only (default: $NODE_NAME).")
@log_options()
def command(listen: str, sysbuspci: str, simulated_host: bool, sysclassnet: str, kubelet_socket: str,
            kubepoddevice: str, priority: str, node_name: str, log_level: str, log_format: str) -> None:
    """Serve upstream's SR-IOV metrics: sriov_vf_* per VF and sriov_kubepoddevice (the pod holding each VF).

    The operator deploys it as the sriov-network-metrics-exporter DaemonSet with the metricsExporter
    feature gate. SIGTERM/SIGINT stop it (exit 0).
    """
    from sriovop.logsetup import configure_logging

    configure_logging(log_level, "console" if log_format == "console" else "json")
    from sriovop.exporter.collector import ExporterCollector
    from sriovop.host.paths import HostPaths
    from sriovop.runtime.serving import metrics_server, parse_bind_address

    try:
        parse_bind_address(listen)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--web.listen-address") from None
    sources = tuple(s.strip() for s in priority.split(",") if s.strip())
    if not sources or set(sources) - {"netlink", "sysfs"}:
        raise click.BadParameter(f"{priority!r}: a comma list of netlink and/or sysfs",
                                 param_hint="--collector.vfstatspriority")
    root = _root_of(sysbuspci)
    socket = Path(kubelet_socket) if _truthy(kubepoddevice) else None
    kernel = kernel_access(root, simulated_host)
    collector = ExporterCollector(HostPaths.at(root), kubelet_socket=socket, sources=sources, netns=kernel.netns)
    server = metrics_server(listen, collector, name="metrics-exporter")
    stop = stop_on_signals("metrics exporter")
    server.start()
    log.info("metrics exporter serving", address=listen, port=server.port, host_root=str(root),
             kubelet_socket=str(socket) if socket else None, node=node_name or None)
    stop.wait()
    server.stop()
    collector.close()
