"""The attach plugin's CNI commands, independent of how the call arrives.

`handle(env, stdin, netns_path)` takes the runtime's CNI_* environment and stdin (as the shim forwards
them) and returns what the plugin binary would print and its exit code.

ADD: default network, then each attachment; any failure deletes what was already added (in reverse) and
fails with a message naming the network and field, which the kubelet shows as the pod's event. The
answer is the default network's result, so the runtime sees the pod IP it always saw.
DEL: the cached delegates in reverse; success when nothing is cached (the runtime may DEL more than once,
or for a sandbox whose ADD never ran).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import structlog

from sriovop.cni.attach import cache, cniargs, config, devinfo, invoker, networks, podstatus, resources, status
from sriovop.cni.attach.cniargs import PodArgs
from sriovop.cni.attach.config import AttachConf
from sriovop.cni.attach.delegate import Delegate
from sriovop.cni.attach.errors import API_FAILED, DELEGATE_FAILED
from sriovop.cni.attach.invoker import RuntimeConf
from sriovop.cni.errors import DECODE_FAILURE, INVALID_ENV, UNKNOWN_CONTAINER, CniError
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ApiError, ConnectionFailed

SUPPORTED_VERSIONS: Final = ("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")
log = structlog.get_logger("cni.attach")

_clients: dict[Path, Client] = {}
_clients_lock = threading.Lock()


def client_for(kubeconfig: Path) -> Client:
    """One client per kubeconfig for the life of the process (the server handles many calls)."""
    with _clients_lock:
        if kubeconfig not in _clients:
            _clients[kubeconfig] = Client(load_config(kubeconfig))
        return _clients[kubeconfig]


class Call:
    """One CNI invocation: the environment, decoded once."""

    def __init__(self, env: Mapping[str, str], netns_path: str | None) -> None:
        self.command = env.get("CNI_COMMAND", "")
        self.container_id = env.get("CNI_CONTAINERID", "")
        self.runtime_netns = env.get("CNI_NETNS", "")  # the runtime's own path, for the results
        self.netns = netns_path or self.runtime_netns
        self.ifname = env.get("CNI_IFNAME", "")
        self.raw_args = env.get("CNI_ARGS", "")
        self.cni_path = tuple(p for p in env.get("CNI_PATH", "").split(":") if p)
        if self.command in ("ADD", "DEL", "CHECK"):
            missing = [k for k, v in (("CNI_CONTAINERID", self.container_id), ("CNI_IFNAME", self.ifname),
                                      ("CNI_PATH", self.cni_path)) if not v]
            if self.command != "DEL" and not self.netns:
                missing.append("CNI_NETNS")
            if missing:
                raise CniError(INVALID_ENV, "missing environment", ", ".join(missing))
        self.pod = PodArgs.from_cni_args(self.raw_args)

    def runtime(self, delegate: Delegate, netns: str | None = None) -> RuntimeConf:
        return RuntimeConf(container_id=self.container_id, netns=self.netns if netns is None else netns,
                           ifname=delegate.ifname, args=cniargs.delegate_args(self.raw_args, self.pod),
                           cni_path=self.cni_path, capability_args=delegate.capability_args)


def _delete_all(call: Call, delegates: list[Delegate], netns: str | None = None) -> list[str]:
    """DEL every delegate in reverse order; the failures, each naming its network."""
    failures = []
    for delegate in reversed(delegates):
        try:
            invoker.delete(delegate.conf, call.runtime(delegate, netns), delegate.result)
        except CniError as exc:
            failures.append(f"network {delegate.network}: {exc}")
        if delegate.device_info_file:
            devinfo.remove(Path(delegate.device_info_file))
    return failures


def cmd_add(call: Call, conf: AttachConf, runtime_config: Mapping[str, Any]) -> dict[str, Any]:
    default = conf.default_network()
    master = Delegate(network=default.name, ifname=call.ifname, conf=default,
                      capability_args=dict(runtime_config), master=True)
    delegates = [master]
    client = client_for(conf.kubeconfig) if conf.kubeconfig is not None and call.pod is not None else None
    if client is not None and call.pod is not None:
        delegates += networks.attachments(client, conf, call.pod, call.container_id, resources.pod_devices)
    networks.check_unique_ifnames(delegates)
    entry = cache.Entry(call.container_id, call.runtime_netns or call.netns, call.raw_args, delegates)
    cache.save(conf.cache_dir, entry)
    for index, delegate in enumerate(delegates):
        try:
            if delegate.device_id and delegate.resource_name and delegate.device_info_file:
                devinfo.copy_from_dp(conf.device_info_dir, delegate.resource_name, delegate.device_id,
                                     Path(delegate.device_info_file))
            delegate.result = _sandbox_as(invoker.add(delegate.conf, call.runtime(delegate)), call)
        except CniError as exc:
            _roll_back(call, conf, delegates[: index + 1])
            where = "default network" if delegate.master else f"network {delegate.network}"
            raise CniError(exc.code, f"{where} (interface {delegate.ifname}): {exc.msg}", exc.details) from None
        cache.save(conf.cache_dir, entry)
        log.info("attached", pod=_pod_key(call), network=delegate.network, ifname=delegate.ifname,
                 device_id=delegate.device_id or None)
    if client is not None and call.pod is not None:
        _write_status(call, conf, client, delegates)
    assert master.result is not None
    return master.result


def _sandbox_as(result: dict[str, Any], call: Call) -> dict[str, Any]:
    """Results name the netns by the runtime's path, not by the descriptor path the delegates used."""
    if call.runtime_netns and call.netns != call.runtime_netns:
        for iface in result.get("interfaces") or []:
            if isinstance(iface, dict) and iface.get("sandbox") == call.netns:
                iface["sandbox"] = call.runtime_netns
    return result


def _write_status(call: Call, conf: AttachConf, client: Client, delegates: list[Delegate]) -> None:
    statuses = []
    for delegate in delegates:
        info = devinfo.load(Path(delegate.device_info_file)) if delegate.device_info_file else None
        statuses += status.entries(delegate.result or {}, delegate.network, delegate.master, info)
    assert call.pod is not None
    try:
        podstatus.write_network_status(client, call.pod.namespace, call.pod.name, call.pod.uid,
                                       status.render(statuses))
    except (ApiError, ConnectionFailed, podstatus.PodUIDMismatch) as exc:
        _roll_back(call, conf, delegates)
        raise CniError(API_FAILED, f"cannot write {status.ANNOTATION} on pod {_pod_key(call)}", str(exc)) from None


def _roll_back(call: Call, conf: AttachConf, added: list[Delegate]) -> None:
    failures = _delete_all(call, added)
    if failures:
        log.warning("roll-back left state behind; the runtime's DEL retries it", pod=_pod_key(call),
                    failures=failures)
        return
    cache.remove(conf.cache_dir, call.container_id)


def cmd_del(call: Call, conf: AttachConf | None) -> None:
    cache_dir = conf.cache_dir if conf is not None else Path(config.DEFAULT_CACHE_DIR)
    entry = cache.load(cache_dir, call.container_id)
    if entry is None:
        log.info("nothing cached for the container; DEL succeeds", container_id=call.container_id)
        return
    failures = _delete_all(call, entry.delegates)
    if failures:
        raise CniError(DELEGATE_FAILED, "DEL failed", "; ".join(failures))
    cache.remove(cache_dir, call.container_id)
    log.info("detached", pod=_pod_key(call), networks=[d.network for d in entry.delegates])


def cmd_check(call: Call, conf: AttachConf) -> None:
    entry = cache.load(conf.cache_dir, call.container_id)
    if entry is None:
        raise CniError(UNKNOWN_CONTAINER, f"no attachments cached for container {call.container_id}")
    for delegate in entry.delegates:
        invoker.check(delegate.conf, call.runtime(delegate), delegate.result)


def _pod_key(call: Call) -> str:
    return f"{call.pod.namespace}/{call.pod.name}" if call.pod is not None else call.container_id


def _decode(stdin: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(stdin)
    except ValueError as exc:
        raise CniError(DECODE_FAILURE, "the network configuration on stdin is not JSON", str(exc)) from None
    if not isinstance(obj, dict):
        raise CniError(DECODE_FAILURE, "the network configuration on stdin is not a JSON object")
    return obj


def handle(env: Mapping[str, str], stdin: bytes, netns_path: str | None = None) -> tuple[bytes, int]:
    """Run one CNI command; (stdout, exit code) as the plugin binary would give them."""
    version = "1.0.0"
    try:
        obj = _decode(stdin) if stdin.strip() else {}
        version = str(obj.get("cniVersion") or version)
        call = Call(env, netns_path)
        if call.command == "VERSION":
            body = {"cniVersion": version, "supportedVersions": list(SUPPORTED_VERSIONS)}
            return json.dumps(body).encode(), 0
        if call.command == "DEL":
            try:
                conf: AttachConf | None = config.parse(obj)
            except CniError:
                conf = None  # a broken config must not keep a sandbox from being torn down
            cmd_del(call, conf)
            return b"", 0
        parsed = config.parse(obj)
        if call.command == "ADD":
            result = cmd_add(call, parsed, obj.get("runtimeConfig") or {})
            return json.dumps(result).encode(), 0
        if call.command == "CHECK":
            cmd_check(call, parsed)
            return b"", 0
        raise CniError(INVALID_ENV, f"CNI_COMMAND {call.command!r} is not ADD, DEL, CHECK or VERSION")
    except CniError as exc:
        log.warning("CNI call failed", command=env.get("CNI_COMMAND"), container_id=env.get("CNI_CONTAINERID"),
                    error=str(exc))
        return exc.to_json(version).encode(), 1
