"""`sriovop device-plugin`: the SR-IOV network device plugin (upstream's flags, config and behaviour)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sriovop.commands._host_kernel import kernel_access, simulated_host_option
from sriovop.lazylog import lazy_logger
from sriovop.stopsignals import stop_on_signals

log = lazy_logger(__name__)

_NAMED_LEVELS = ("debug", "info", "warning", "error")


def log_level(value: str) -> str:
    """Our level names, or upstream's glog verbosity (the operator renders `--log-level=10`): 0 and 1
    are info, 2 and above debug."""
    if value.lower() in _NAMED_LEVELS:
        return value.lower()
    try:
        number = int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r}: one of {', '.join(_NAMED_LEVELS)} or a glog level (0-10)",
                                 param_hint="--log-level") from None
    if number < 0:
        raise click.BadParameter(f"{value!r}: a glog level is 0 or more", param_hint="--log-level")
    return "debug" if number >= 2 else "info"


@click.command()
@click.option("--config-file", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("/etc/pcidp/config.json"), show_default=True,
              help="The resourceList JSON (the operator mounts ConfigMap device-plugin-config and passes "
                   "/etc/pcidp/$(NODE_NAME)). Watched: a changed file reloads the resources.")
@click.option("--resource-prefix", default="intel.com", show_default=True,
              help="Prefix of resources that set no resourcePrefix of their own.")
@click.option("--use-cdi", is_flag=True, help="Hand devices to the runtime as CDI devices (spec files in --cdi-dir).")
@click.option("--cdi-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("/var/run/cdi"),
              show_default=True, help="Where --use-cdi writes its CDI spec files.")
@click.option("--host-root", type=click.Path(file_okay=False, path_type=Path), default=Path("/"),
              show_default=True, help="The host's root for sysfs.")
@simulated_host_option("--host-root")
@click.option("--device-plugin-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("/var/lib/kubelet/device-plugins"), show_default=True,
              help="The kubelet's device-plugin directory (kubelet.sock and the plugin sockets).")
@click.option("--plugin-registry-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Register through the kubelet's plugin watcher in this directory (its "
                   "<root-dir>/plugins_registry) instead of kubelet.sock.")
@click.option("--devinfo-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("/var/run/k8s.cni.cncf.io/devinfo/dp"), show_default=True,
              help="Where device-info files for the CNI are written at Allocate.")
@click.option("--watch-interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True,
              help="Seconds between checks of the plugin sockets, kubelet.sock and the config file.")
@click.option("--health-interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True,
              help="Seconds between host discoveries that mark devices Healthy/Unhealthy.")
@click.option("--log-level", "level", default="info", show_default=True,
              help="debug, info, warning, error, or upstream's glog verbosity number.")
@click.option("--log-format", type=click.Choice(["json", "console"]), default="json", show_default=True)
def command(config_file: Path, resource_prefix: str, use_cdi: bool, cdi_dir: Path, host_root: Path,
            simulated_host: bool, device_plugin_dir: Path, plugin_registry_dir: Path | None, devinfo_dir: Path,
            watch_interval: float, health_interval: float, level: str, log_format: str) -> None:
    """Advertise the host's SR-IOV network devices to the kubelet as extended resources and hand them to pods.

    Upstream's sriov-network-device-plugin, interoperable with its config, env variables and device-info
    files; the operator deploys it as the sriov-device-plugin DaemonSet. SIGTERM/SIGINT stop it (exit 0).
    """
    from sriovop.logsetup import configure_logging

    configure_logging(log_level(level), "console" if log_format == "console" else "json")
    from sriovop.deviceplugin.config import ConfigError
    from sriovop.deviceplugin.manager import Manager, PluginOptions
    from sriovop.host.errors import HostError
    from sriovop.host.host import Host

    options = PluginOptions(config_file=config_file, resource_prefix=resource_prefix, host_root=host_root,
                            device_plugin_dir=device_plugin_dir, plugin_registry_dir=plugin_registry_dir,
                            devinfo_dir=devinfo_dir, use_cdi=use_cdi, cdi_dir=cdi_dir,
                            watch_interval=watch_interval, health_interval=health_interval)
    stop = stop_on_signals("device plugin")
    kernel = kernel_access(host_root, simulated_host)
    try:
        manager = Manager(options, Host(host_root, kernel=kernel))
    except HostError as exc:
        click.echo(f"device-plugin: {exc}", err=True)
        sys.exit(1)
    try:
        manager.run(stop)
    except ConfigError as exc:
        click.echo(f"device-plugin: {exc}", err=True)
        sys.exit(1)
    log.info("device plugin stopped")
