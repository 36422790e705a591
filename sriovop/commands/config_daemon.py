"""`sriovop config-daemon`: the node agent that configures SR-IOV NICs from the node's NodeState."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from sriovop.commands._host_kernel import kernel_access, simulated_host_option
from sriovop.commands._options import kubeconfig_option, log_options
from sriovop.lazylog import lazy_logger
from sriovop.stopsignals import stop_on_signals

log = lazy_logger(__name__)


def _seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if value <= 0:
        raise click.BadParameter(f"{value!r}: must be greater than zero (seconds)", ctx, param)
    return float(value)


#: Development clusters only (set through SriovOperatorConfig.spec.configDaemonEnvVars): a path under the
#: host root holding a simulated SR-IOV host, so the DaemonSet's pod configures that instead of the
#: machine, which has no SR-IOV (as --simulated-host with that root). Anything but a running simulator
#: there is refused.
ENV_SIMULATED_HOST = "SRIOVOP_SIMULATED_HOST"


def simulated_root(root: Path, relative: str) -> Path:
    if not relative:
        return root
    from sriovop.sim.endpoint import read_endpoint

    sim_root = root / relative.lstrip("/")
    if read_endpoint(sim_root) is None:
        raise click.UsageError(f"${ENV_SIMULATED_HOST}={relative!r}: {sim_root} is not a running simulated host "
                               "(this variable is for development clusters with simulated SR-IOV hosts only)")
    return sim_root


@click.group(invoke_without_command=True)
@click.option("--node-name", envvar="NODE_NAME", default=None,
              help="This node's name (required; default: $NODE_NAME, set from spec.nodeName in the DaemonSet).")
@click.option("--host-root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the host's / is: default /host when that exists and the daemon runs in a container "
                   "(the DaemonSet mounts the host there), else /.")
@simulated_host_option("--host-root")
@click.option("--state-dir", default=None,
              help="Operator state directory on the host, relative to the host root "
                   "(default etc/sriov-operator: PF records, applied generation).")
@kubeconfig_option
@click.option("--namespace", envvar="NAMESPACE", default=None,
              help="Operator namespace holding the NodeState (default: $NAMESPACE, else sriov-network-operator).")
@log_options(live=True)
@click.option("--metrics-bind-address", default="",
              help="host:port (or :port) serving per-VF counters at /metrics; empty (default) disables it.")
@click.option("--disable-plugins", default="", help="Comma list of plugins not to load (only 'mellanox').")
@click.option("--reboot/--no-reboot", default=True, show_default=True,
              help="Reboot a real host when the configuration needs it (upstream's behaviour: systemd-run "
                   "through chroot). A simulated host is never rebooted; the need is reported instead.")
@click.option("--reboot-limit", type=click.IntRange(min=1), default=2, show_default=True,
              help="Reboot guard: when the same reboot reasons (missing kernel arguments, firmware settings) "
                   "remain after this many reboots, report the NodeState Failed and uncordon instead of "
                   "rebooting again.")
@click.option("--reboot-command", default="",
              help="Shell command run (in the host root) instead of upstream's `systemd-run ... reboot`, "
                   "e.g. for hosts without systemd.")
@click.option("--requeue-after", type=float, default=30.0, show_default=True, callback=_seconds,
              help="Seconds between drift checks of a configured host.")
@click.option("--retry-base-delay", type=float, default=1.0, show_default=True, callback=_seconds,
              help="First retry delay after a failed reconcile (doubles per failure).")
@click.option("--retry-max-delay", type=float, default=300.0, show_default=True, callback=_seconds,
              help="Longest retry delay after repeated failures.")
@click.option("--startup-max-delay", type=float, default=30.0, show_default=True, callback=_seconds,
              help="Longest wait between start-up attempts while the API server or operator objects are missing.")
@click.option("--sysfs-write-timeout", type=float, default=120.0, show_default=True, callback=_seconds,
              help="Timeout of each sysfs write (sriov_numvfs, driver binding).")
@click.option("--vf-wait-timeout", type=float, default=120.0, show_default=True, callback=_seconds,
              help="How long to wait for created VFs to appear.")
@click.option("--netdev-wait-timeout", type=float, default=10.0, show_default=True, callback=_seconds,
              help="How long to wait for a VF's netdev after binding its driver.")
@click.option("--use-systemd-service", is_flag=True, default=False,
              help="Systemd configuration mode (configurationMode: systemd): write the spec for the host's "
                   "sriov-config services, install them, reboot for changes, report their result.")
@click.option("--parallel-nic-config", is_flag=True, default=False,
              help="Configure the PFs of this node concurrently and report every failing PF (upstream's flag; "
                   "the operator adds it with the parallelNicConfig feature gate). Default: one PF at a time, "
                   "stopping at the first failure.")
@click.option("--manage-software-bridges", is_flag=True, default=False,
              help="Create, update and remove the OVS bridges of spec.bridges and report status.bridges "
                   "(the operator passes it with the manageSoftwareBridges feature gate).")
@click.option("--ovs-socket-path", default="",
              help="OVSDB socket for --manage-software-bridges, e.g. unix:/var/run/openvswitch/db.sock "
                   "(default: var/run/openvswitch/db.sock under the host root).")
@click.pass_context
def command(ctx: click.Context, node_name: str | None, host_root: Path | None, simulated_host: bool,
            state_dir: str | None,
            kubeconfig: str | None, namespace: str | None, log_level: str, log_format: str, metrics_bind_address: str,
            disable_plugins: str, reboot: bool, requeue_after: float, retry_base_delay: float,
            retry_max_delay: float, startup_max_delay: float, sysfs_write_timeout: float, vf_wait_timeout: float,
            netdev_wait_timeout: float, use_systemd_service: bool, parallel_nic_config: bool,
            manage_software_bridges: bool, ovs_socket_path: str, reboot_limit: int, reboot_command: str) -> None:
    """Configure this node's SR-IOV NICs from its SriovNetworkNodeState and report what the host has.

    Environment: NODE_NAME, NAMESPACE, KUBECONFIG, DEV_MODE=TRUE (configure NICs missing from the
    supported-nic-ids list), USE_EXTERNAL_DRAINER=true, SRIOVOP_CRASH_AT_STEP (tests: SIGKILL the
    daemon before the named apply step).

    The daemon never exits on its own for a missing API server, Node, NodeState, ConfigMap or operator
    config: it logs what it waits for and retries. SIGTERM/SIGINT stop it (exit 0).
    """
    from sriovop.logsetup import configure_logging
    from sriovop.runtime.heap import limit_malloc_arenas

    limit_malloc_arenas()  # before any thread: see its docstring
    configure_logging(log_level, "console" if log_format == "console" else "json")
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"host_root": host_root, "simulated_host": simulated_host}
        return
    from sriovop.api.v1 import consts
    from sriovop.daemon.app import Daemon
    from sriovop.daemon.settings import DaemonSettings, default_host_root, env_true
    from sriovop.daemon.startup import StartupAborted
    from sriovop.host.apply import ApplyOptions
    from sriovop.host.steps import crash_hook_from_env
    from sriovop.logsetup import set_level
    from sriovop.runtime.config import ConfigError, load_config

    if not node_name:
        raise click.UsageError("--node-name is required (or set $NODE_NAME)")
    plugins = tuple(p.strip() for p in disable_plugins.split(",") if p.strip())
    if set(plugins) - {"mellanox"}:
        raise click.BadParameter(f"only 'mellanox' can be disabled, not {sorted(set(plugins) - {'mellanox'})}",
                                 param_hint="--disable-plugins")
    root = host_root if host_root is not None else Path(default_host_root())
    if not root.is_dir():
        raise click.BadParameter(f"{root} is not a directory", param_hint="--host-root")
    relative = os.environ.get(ENV_SIMULATED_HOST, "")
    root = simulated_root(root, relative)
    kernel = kernel_access(root, simulated_host or bool(relative))
    if metrics_bind_address:
        from sriovop.runtime.serving import parse_bind_address
        try:
            parse_bind_address(metrics_bind_address)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--metrics-bind-address") from None
    try:
        hook = crash_hook_from_env()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        settings = DaemonSettings(
            node_name=node_name, namespace=namespace or consts.DEFAULT_OPERATOR_NAMESPACE, host_root=root,
            state_dir=state_dir, dev_mode=os.environ.get(consts.ENV_DEV_MODE, "").upper() == "TRUE",
            disable_plugins=plugins, use_external_drainer=env_true(consts.ENV_USE_EXTERNAL_DRAINER),
            reboot=reboot, systemd_mode=use_systemd_service, reboot_limit=reboot_limit,
            reboot_command=reboot_command, requeue_after=requeue_after, retry_base_delay=retry_base_delay,
            retry_max_delay=retry_max_delay, startup_max_delay=startup_max_delay,
            metrics_bind_address=metrics_bind_address or None,
            apply_options=ApplyOptions(write_timeout=sysfs_write_timeout, vf_wait_timeout=vf_wait_timeout,
                                       vf_poll_interval=min(1.0, vf_wait_timeout / 20),
                                       netdev_wait_timeout=netdev_wait_timeout,
                                       manage_software_bridges=manage_software_bridges,
                                       ovsdb_socket=ovs_socket_path, parallel=parallel_nic_config),
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        rest = load_config(kubeconfig)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None

    stop = stop_on_signals("config daemon")
    daemon = Daemon(settings, rest, hook=hook, set_log_level=set_level, kernel=kernel)
    try:
        daemon.run(stop)
    except StartupAborted:
        pass
    sys.exit(0)


@command.command("service")
@click.option("--phase", type=click.Choice(["pre", "post"]), default="pre", show_default=True,
              help="pre: before NetworkManager (VFs created, left unbound); post: after the network is up "
                   "(VFs and OVS bridges configured).")
@click.option("--host-root", "service_root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The host's / (default: the config-daemon group's --host-root, else /).")
@simulated_host_option("--host-root")
@click.pass_context
def service(ctx: click.Context, phase: str, service_root: Path | None, simulated_host: bool) -> None:
    """Apply the systemd-mode configuration at boot (run by sriov-config.service and
    sriov-config-post-network.service from /etc/sriov-operator/sriov-interface-config.yaml).

    Writes /etc/sriov-operator/sriov-interface-result.yaml (pre: InProgress, post: Succeeded, or
    Failed with the reason) and exits 1 when the phase failed, so systemd marks the unit failed.
    """
    from sriovop.daemon.systemd_service import run_phase

    root = Path(service_root or (ctx.obj or {}).get("host_root") or "/")
    simulated = simulated_host or bool((ctx.obj or {}).get("simulated_host"))
    result = run_phase(phase, root, kernel=kernel_access(root, simulated))
    if result.sync_status == "Failed":
        click.echo(f"sriovop config-daemon service --phase {phase}: {result.last_sync_error}", err=True)
        sys.exit(1)
