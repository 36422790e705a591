"""`sriovop operator`: the controllers of the SR-IOV network operator, in one process."""

from __future__ import annotations

import re
import sys

import click

from sriovop.commands._options import freeze_gc_option, kubeconfig_option, log_options
from sriovop.lazylog import lazy_logger

log = lazy_logger(__name__)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")


class Duration(click.ParamType):
    """Seconds as a number, or Go-style `15s`, `500ms`, `2m` (what controller-runtime flags take)."""

    name = "duration"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            seconds = float(value)
        else:
            m = _DURATION.match(str(value))
            if not m:
                self.fail(f"{value!r} is not a duration (examples: 15, 15s, 500ms, 2m)", param, ctx)
            unit = m.group(2) or "s"
            seconds = float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[unit]
        if seconds <= 0:
            self.fail(f"{value!r} must be greater than zero", param, ctx)
        return seconds


def _address(value: str) -> str | None:
    """"0" (controller-runtime's "disabled") or empty turns an endpoint off."""
    return None if value in ("", "0") else value


@click.command()
@click.option("--metrics-bind-address", default=":8080", show_default=True,
              help="Address of the Prometheus /metrics endpoint; 0 disables it.")
@click.option("--health-probe-bind-address", default=":8081", show_default=True,
              help="Address of /healthz and /readyz; 0 disables them.")
@kubeconfig_option
@click.option("--namespace", envvar="NAMESPACE", default=None,
              help="Operator namespace (default: $NAMESPACE).")
@log_options(live=True)
@click.option("--leader-elect/--no-leader-elect", default=False, show_default=True,
              help="Run controllers only while holding the Lease (needed with more than one replica).")
@click.option("--leader-election-id", default="a56def2a.openshift.io", show_default=True,
              help="Name of the Lease.")
@click.option("--leader-election-namespace", default=None,
              help="Namespace of the Lease (default: the operator namespace).")
@click.option("--leader-election-identity", default=None,
              help="This replica's identity in the Lease (default: hostname plus a random suffix).")
@click.option("--leader-election-lease-duration", type=Duration(), default="15s", show_default=True,
              help="How long followers wait after the last renewal before taking over.")
@click.option("--leader-election-renew-deadline", type=Duration(), default="10s", show_default=True,
              help="How long the leader keeps trying to renew before it stops leading.")
@click.option("--leader-election-retry-period", type=Duration(), default="2s", show_default=True,
              help="Pause between election attempts.")
@click.option("--webhook-ca-lifetime", envvar="ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME", default=None,
              help="Self-managed certificates: lifetime of the webhook CA, Go duration (default 168h); "
                   "rotated at 80% of it, or earlier to leave twice the delivery margin (at least "
                   "twice that again).")
@click.option("--webhook-cert-lifetime", envvar="ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME", default=None,
              help="Self-managed certificates: lifetime of each webhook serving certificate, Go duration "
                   "(default 24h, at most the CA's, at least twice the delivery margin); renewed at 80% "
                   "of it, or earlier to leave the delivery margin.")
@click.option("--graceful-shutdown-timeout", type=Duration(), default="30s", show_default=True,
              help="How long controllers get to finish their work on shutdown.")
@freeze_gc_option
def command(metrics_bind_address: str, health_probe_bind_address: str, kubeconfig: str | None,
            namespace: str | None, log_level: str, log_format: str, leader_elect: bool, leader_election_id: str,
            leader_election_namespace: str | None, leader_election_identity: str | None,
            leader_election_lease_duration: float, leader_election_renew_deadline: float,
            leader_election_retry_period: float, webhook_ca_lifetime: str | None, webhook_cert_lifetime: str | None,
            graceful_shutdown_timeout: float, freeze_gc: bool) -> None:
    """Run the operator: networks → NADs, policies → NodeStates and device-plugin config, operator
    config → DaemonSets and webhooks, pool configs, and node drains.

    Environment (upstream's names): NAMESPACE, RESOURCE_PREFIX (required), DEV_MODE=TRUE,
    STALE_NODE_STATE_CLEANUP_DELAY_MINUTES (default 30), CLUSTER_TYPE, the image variables
    (SRIOV_NETWORK_CONFIG_DAEMON_IMAGE, SRIOV_DEVICE_PLUGIN_IMAGE, SRIOV_CNI_IMAGE,
    SRIOV_INFINIBAND_CNI_IMAGE, OVS_CNI_IMAGE, RDMA_CNI_IMAGE, SRIOV_NETWORK_WEBHOOK_IMAGE,
    NETWORK_RESOURCES_INJECTOR_IMAGE), SRIOV_CNI_BIN_PATH, IMAGE_PULL_SECRETS.

    Webhook certificates: CLUSTER_TYPE=openshift uses OpenShift's service CA,
    ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED=true cert-manager,
    ADMISSION_CONTROLLERS_CERTIFICATES_{OPERATOR,INJECTOR}_CA_CRT (base64 PEM) Secrets you provide;
    otherwise the operator creates and rotates a CA and the serving certificates itself (CA Secret
    ADMISSION_CONTROLLERS_CERTIFICATES_CA_SECRET_NAME, default sriov-network-operator-webhook-ca;
    ADMISSION_CONTROLLERS_CERTIFICATES_DELIVERY_MARGIN, default 5m: how long the kubelet and the
    webhook may take to serve a renewed certificate).

    SIGTERM/SIGINT: stop, remove the finalizer from SriovNetworks in the operator namespace, set the
    operator's webhooks to failurePolicy Ignore, exit 0. A failing manager: the same cleanup, exit 1.
    """
    from sriovop.logsetup import configure_logging
    from sriovop.runtime.heap import limit_malloc_arenas

    limit_malloc_arenas()  # before any thread: see its docstring
    configure_logging(log_level, "console" if log_format == "console" else "json")
    from sriovop.operator.app import ElectionOptions, Operator, OperatorOptions
    from sriovop.operator.nics import SupportedNicsError, load_supported_nics
    from sriovop.operator.settings import OperatorSettings, OperatorSettingsError
    from sriovop.runtime.client import Client
    from sriovop.runtime.config import ConfigError, load_config
    from sriovop.runtime.leaderelection import LeaderElectionConfig, default_identity

    try:
        settings = OperatorSettings.from_env(namespace, webhook_ca_lifetime=webhook_ca_lifetime,
                                             webhook_cert_lifetime=webhook_cert_lifetime)
    except OperatorSettingsError as exc:
        raise click.ClickException(str(exc)) from None
    election = ElectionOptions(
        enabled=leader_elect, lease_name=leader_election_id,
        namespace=leader_election_namespace or settings.namespace,
        identity=leader_election_identity or default_identity(),
        lease_duration=leader_election_lease_duration, renew_deadline=leader_election_renew_deadline,
        retry_period=leader_election_retry_period)
    if leader_elect:
        try:
            LeaderElectionConfig(lease_duration=election.lease_duration, renew_deadline=election.renew_deadline,
                                 retry_period=election.retry_period).validate()
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--leader-election-*") from None
    try:
        rest = load_config(kubeconfig)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        nics = load_supported_nics(Client(rest), settings.namespace)
    except SupportedNicsError as exc:
        raise click.ClickException(str(exc)) from None
    options = OperatorOptions(metrics_bind_address=_address(metrics_bind_address),
                              health_probe_bind_address=_address(health_probe_bind_address),
                              graceful_shutdown_timeout=graceful_shutdown_timeout, election=election,
                              freeze_gc=freeze_gc)
    from sriovop.runtime import gcpause

    gcpause.install()  # once the settings hold: the collector's pauses from the caches' first sync on
    operator = Operator(rest, settings, nics, options)
    operator.install_signal_handlers()
    sys.exit(operator.run())
