"""From the pod to the list of delegates to run: the default network first, then each network the pod's
annotation names, with its NetworkAttachmentDefinition's config and, for a device-plugin resource, the
device the kubelet allocated. Everything is read and checked before any plugin runs, so a bad
annotation or NAD fails the ADD with nothing to undo.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION
from sriovop.cni.attach import annotation, devinfo, netconf, resources
from sriovop.cni.attach.annotation import AnnotationError
from sriovop.cni.attach.cniargs import PodArgs
from sriovop.cni.attach.config import AttachConf
from sriovop.cni.attach.delegate import Delegate, attachment
from sriovop.cni.attach.errors import API_FAILED
from sriovop.cni.attach.netconf import NetConfError
from sriovop.cni.errors import INVALID_CONFIG, CniError
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, ConnectionFailed, NotFound
from sriovop.runtime.kinds import POD

DeviceSource = Callable[[Path, str, str, str], dict[str, list[str]]]


def _nad_conf(nad: dict[str, Any], key: str) -> netconf.NetConf:
    config = (nad.get("spec") or {}).get("config")
    if not isinstance(config, str) or not config.strip():
        raise CniError(INVALID_CONFIG, f"network {key}: spec.config",
                       "is empty (the NetworkAttachmentDefinition needs a CNI config)")
    try:
        return netconf.parse(config)
    except NetConfError as exc:
        raise CniError(INVALID_CONFIG, f"network {key}: spec.config.{exc.field}", exc.reason) from None


def attachments(client: Client, conf: AttachConf, pod_args: PodArgs, container_id: str,
                device_source: DeviceSource = resources.pod_devices) -> list[Delegate]:
    """The extra networks of the pod in annotation order, interfaces net1, net2, ... unless requested."""
    try:
        pod = client.get(POD, pod_args.name, pod_args.namespace)
    except (ApiError, ConnectionFailed) as exc:
        raise CniError(API_FAILED, f"cannot read pod {pod_args.namespace}/{pod_args.name}", str(exc)) from None
    meta = pod.get("metadata") or {}
    value = (meta.get("annotations") or {}).get(annotation.ANNOTATION, "")
    try:
        selections = annotation.parse(value, pod_args.namespace)
    except AnnotationError as exc:
        raise CniError(INVALID_CONFIG, f"pod annotation {annotation.ANNOTATION}: {exc.field}",
                       exc.reason) from None
    assigner: resources.DeviceAssigner | None = None
    out: list[Delegate] = []
    for index, selection in enumerate(selections, start=1):
        try:
            nad = client.get(NETWORK_ATTACHMENT_DEFINITION, selection.name, selection.namespace)
        except NotFound:
            raise CniError(INVALID_CONFIG, f"network {selection.key}: networks[{index - 1}].name",
                           f"no NetworkAttachmentDefinition {selection.name} in namespace {selection.namespace}"
                           ) from None
        except (ApiError, ConnectionFailed) as exc:
            raise CniError(API_FAILED, f"cannot read NetworkAttachmentDefinition {selection.key}",
                           str(exc)) from None
        nad_conf = _nad_conf(dict(nad), selection.key)
        resource = str(((nad.get("metadata") or {}).get("annotations") or {})
                       .get(consts.NAD_RESOURCE_NAME_ANNOTATION, ""))
        device_id = ""
        if resource:
            if assigner is None:  # asked once per pod, on the first NAD with a resource
                uid = pod_args.uid or str(meta.get("uid", ""))
                assigner = resources.DeviceAssigner(
                    device_source(conf.kubelet_root, pod_args.namespace, pod_args.name, uid))
            device_id = assigner.take(resource)
        ifname = selection.interface or f"net{index}"
        info_file = devinfo.cni_path(conf.device_info_dir, selection.key, container_id, ifname)
        out.append(attachment(selection, nad_conf, index, resource, device_id, str(info_file)))
    return out


def check_unique_ifnames(delegates: list[Delegate]) -> None:
    seen: dict[str, str] = {}
    for i, delegate in enumerate(delegates):
        if delegate.ifname in seen:
            where = f"networks[{i - 1}].interface" if i else "CNI_IFNAME"
            raise CniError(INVALID_CONFIG, f"network {delegate.network}: {where}",
                           f"interface {delegate.ifname!r} is already used by {seen[delegate.ifname]}")
        seen[delegate.ifname] = delegate.network
