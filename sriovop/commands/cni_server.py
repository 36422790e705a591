"""`sriovop cni-server`: the node server the sriov / ib-sriov shims on /opt/cni/bin talk to."""

from __future__ import annotations

from pathlib import Path

import click

from sriovop.commands._host_kernel import simulated_host_option, vf_kernel
from sriovop.commands._options import log_options
from sriovop.lazylog import lazy_logger
from sriovop.stopsignals import stop_on_signals

log = lazy_logger(__name__)


@click.command()
@click.option("--socket-dir", type=click.Path(file_okay=False, path_type=Path), default="/var/run/sriovop/cni",
              show_default=True, help="Directory of the <plugin>.sock sockets (created 0700).")
@click.option("--plugins", default="sriov,ib-sriov", show_default=True,
              help="Comma list of the plugins to serve, one socket each.")
@click.option("--host-root", type=click.Path(file_okay=False, path_type=Path), default="/", show_default=True,
              help="The host's / as seen here (sysfs of the PFs and VFs).")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default="/var/lib/cni",
              show_default=True, help="The plugins' state: caches, VF locks and allocation files (upstream's).")
@click.option("--cni-path-prefix", default="", help="Prefix for the runtime's CNI_PATH directories when "
              "running IPAM plugins (e.g. /host when the host's /opt/cni/bin is mounted there).")
@click.option("--netns-root", type=click.Path(file_okay=False, path_type=Path), default="/", show_default=True,
              help="Where the runtime's netns paths resolve, to tell a live allocation from a stale one "
                   "(with hostPID: /proc/1/root).")
@click.option("--pod-resources-socket", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The kubelet's pod-resources socket (/var/lib/kubelet/pod-resources/kubelet.sock): sriov ADD "
                   "then takes only a VF the kubelet allocated to the pod. Unset: no ownership check.")
@simulated_host_option("--host-root")
@log_options()
def command(socket_dir: Path, plugins: str, host_root: Path, state_dir: Path, cni_path_prefix: str, netns_root: Path,
            pod_resources_socket: Path | None, simulated_host: bool, log_level: str, log_format: str) -> None:
    """Serve sriovop's CNI plugins (sriov, ib-sriov) on unix sockets for the static shim.

    Only root on the node may connect (socket 0600, SO_PEERCRED uid 0). SIGTERM/SIGINT stop it (exit 0).
    """
    from sriovop.logsetup import configure_logging

    configure_logging(log_level, "console" if log_format == "console" else "json")
    from sriovop.cni.server import CniServer, ServerOptions, load_handlers

    names = [n.strip() for n in plugins.split(",") if n.strip()]
    options = ServerOptions(host_root=host_root, state_dir=state_dir, cni_path_prefix=cni_path_prefix,
                            netns_root=netns_root, kernel=vf_kernel(host_root, simulated_host),
                            pod_resources=pod_resources_socket)
    try:
        handlers = load_handlers(names, options)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--plugins") from None
    stop = stop_on_signals("cni server")
    server = CniServer(socket_dir, handlers)
    server.start()
    log.info("cni server ready", plugins=names, socket_dir=str(socket_dir))
    stop.wait()
    server.stop()
