"""`sriovop webhook`: the admission server (upstream's `webhook start` plus the resources injector)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sriovop.api.v1 import consts
from sriovop.commands._options import freeze_gc_option, kubeconfig_option, log_options
from sriovop.lazylog import lazy_logger
from sriovop.stopsignals import stop_on_signals

log = lazy_logger(__name__)


@click.command()
@click.option("--port", type=click.IntRange(1, 65535), default=6443, show_default=True,
              help="HTTPS port (upstream's manifests use 6443 behind a Service on 443).")
@click.option("--bind-address", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--tls-cert-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="PEM serving certificate (chain) the API server trusts through the caBundle.")
@click.option("--tls-private-key-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              required=True, help="PEM private key of the serving certificate.")
@click.option("--tls-min-version", type=click.Choice(["VersionTLS12", "VersionTLS13"]),
              default=lambda: os.environ.get("TLS_MIN_VERSION") or "VersionTLS12",
              help="Lowest TLS version accepted (env TLS_MIN_VERSION).  [default: VersionTLS12]")
@click.option("--tls-cipher-suites", default=lambda: os.environ.get("TLS_CIPHER_SUITES") or None,
              help="OpenSSL cipher list for TLS 1.2 connections (env TLS_CIPHER_SUITES).")
@click.option("--tls-reload-interval", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
              help="Seconds between checks of the certificate files; a changed certificate (rotation) is "
                   "loaded without a restart.")
@kubeconfig_option
@click.option("--namespace", default=None, help="Operator namespace (default: $NAMESPACE).")
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Judge from informer caches, after a consistent read of the current resourceVersion "
                   "that the caches must catch up with (read-your-writes); --no-cache lists Nodes, "
                   "NodeStates and policies from the API server on every request (seconds at 5,000 nodes).")
@click.option("--cache-settle", type=click.FloatRange(0.0, 1.0), default=0.005, show_default=True,
              help="Seconds a cache whose kind had no write since the consistent read waits for events "
                   "still in flight before it counts as caught up.")
@click.option("--cache-timeout", type=click.FloatRange(0.1, 9.0), default=5.0, show_default=True,
              help="Seconds a request waits for the caches to catch up before it is denied (the API "
                   "server's webhook timeout is 10 s).")
@click.option("--inject-hugepage-down-api", "--injectHugepageDownApi", "inject_hugepage_down_api", is_flag=True,
              help="Pod injector: expose hugepage requests/limits through the podnetinfo volume and set "
                   "CONTAINER_NAME (the nri-control-switches ConfigMap can switch it on the fly).")
@click.option("--honor-resources", is_flag=True,
              help="Pod injector: add the networks' count to a resource the first container already asks "
                   "for, instead of leaving such a resource alone (switchable through the ConfigMap too).")
@click.option("--network-resource-name-keys", default=consts.NAD_RESOURCE_NAME_ANNOTATION, show_default=True,
              help="Pod injector: comma-separated NAD annotation keys that name a device resource.")
@log_options()
@freeze_gc_option
def command(port: int, bind_address: str, tls_cert_file: Path, tls_private_key_file: Path, tls_min_version: str,
            tls_cipher_suites: str | None, tls_reload_interval: float, kubeconfig: str | None,
            namespace: str | None, cache: bool, cache_settle: float, cache_timeout: float,
            inject_hugepage_down_api: bool, honor_resources: bool, network_resource_name_keys: str, log_level: str,
            log_format: str, freeze_gc: bool) -> None:
    """Serve the admission webhooks over HTTPS.

    Routes: /mutating-custom-resource (policy defaults), /validating-custom-resource (policies, operator
    config, pool configs, networks), /mutate (pod resource injection), /readyz, /metrics.
    The serving certificate is re-read when its files change (certificate rotation). The pod injector
    follows the nri-control-switches ConfigMap of the operator namespace through a watch.
    Environment: NAMESPACE, RESOURCE_PREFIX (default openshift.io), DEV_MODE=TRUE admits unsupported NICs.
    """
    from sriovop.logsetup import configure_logging
    from sriovop.runtime.heap import limit_malloc_arenas

    limit_malloc_arenas()  # before any thread: see its docstring
    configure_logging(log_level, "console" if log_format == "console" else "json")
    import ssl  # here, like the imports below: `webhook --help` need not pay for it

    from sriovop.runtime.client import Client
    from sriovop.runtime.config import ConfigError, load_config
    from sriovop.webhook.certmetrics import SERVED_CERTIFICATE
    from sriovop.webhook.cluster_view import ClientClusterView
    from sriovop.webhook.control_switches import ControlSwitches, split_keys
    from sriovop.webhook.handler import AdmissionHandler
    from sriovop.webhook.informer_view import InformerClusterView
    from sriovop.webhook.server import WebhookServer
    from sriovop.webhook.settings import WebhookSettings
    from sriovop.webhook.switches_source import WatchedSwitches
    from sriovop.webhook.tls import CertReloader, server_ssl_context

    try:
        settings = WebhookSettings.from_env(namespace)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        ssl_context = server_ssl_context(tls_cert_file, tls_private_key_file, tls_min_version, tls_cipher_suites)
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise click.ClickException(f"cannot load the TLS certificate/key: {exc}") from None
    try:
        client = Client(load_config(kubeconfig))
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    keys = split_keys(network_resource_name_keys)
    if not keys:
        raise click.UsageError("--network-resource-name-keys: give at least one annotation key")
    from sriovop.runtime import gcpause

    gcpause.install()  # once the settings hold: the collector's pauses from the caches' first sync on
    switches = WatchedSwitches(client, settings.namespace, ControlSwitches(
        hugepage_down_api=inject_hugepage_down_api, honor_resources=honor_resources, resource_name_keys=keys))
    informer_view: InformerClusterView | None = None
    try:
        if cache:
            informer_view = InformerClusterView(client, settings.namespace, settle=cache_settle,
                                                barrier_timeout=cache_timeout)
            informer_view.start()
            view: ClientClusterView | InformerClusterView = informer_view
        else:
            view = ClientClusterView(client, settings.namespace)
    except TimeoutError as exc:
        raise click.ClickException(str(exc)) from None
    except Exception as exc:
        raise click.ClickException(
            f"cannot load the supported NIC list (ConfigMap {settings.namespace}/supported-nic-ids): {exc}"
        ) from None
    switches.start()  # after the view: a missing permission there fails the start at once
    if freeze_gc and informer_view is not None:
        from sriovop.runtime.gcfreeze import freeze_now

        freeze_now()  # the synced caches out of every full collection: sriovop.runtime.gcfreeze
    try:
        server = WebhookServer((bind_address, port), AdmissionHandler(view, settings, switches), ssl_context)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {bind_address}:{port}: {exc}") from None
    reloader = CertReloader(ssl_context, tls_cert_file, tls_private_key_file, interval=tls_reload_interval)
    reloader.start()
    SERVED_CERTIFICATE.watch(tls_cert_file)
    stop_on_signals("webhook", on_stop=lambda _signum: server.shutdown())
    log.info("webhook_serving", address=bind_address, port=server.port, namespace=settings.namespace,
             resource_prefix=settings.resource_prefix, dev_mode=settings.dev_mode, cache=cache,
             supported_nics=len(view.supported_nics()), pid=os.getpid())
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        reloader.stop()
        switches.stop()
        if informer_view is not None:
            informer_view.stop()
    log.info("webhook_stopped")
