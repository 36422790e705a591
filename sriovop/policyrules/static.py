"""SriovNetworkNodePolicy static rules: what can be judged from the policy alone (and the NIC table)."""

from __future__ import annotations

import re

from sriovop.api.v1 import consts
from sriovop.api.v1.pfnames import PfNameError, validate_pf_name
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.policyrules.denied import Denied
from sriovop.policyrules.spec import PolicySpec

_RESOURCE_NAME = re.compile(consts.RESOURCE_NAME_PATTERN)
_ENUMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "device_type": ("spec.deviceType", (consts.DEVICE_TYPE_NETDEVICE, consts.DEVICE_TYPE_VFIO_PCI)),
    "link_type": ("spec.linkType", ("", "eth", "ETH", "ib", "IB")),
    "eswitch_mode": ("spec.eSwitchMode", ("", consts.ESWITCH_MODE_LEGACY, consts.ESWITCH_MODE_SWITCHDEV)),
    "vdpa_type": ("spec.vdpaType", ("", consts.VDPA_TYPE_VIRTIO, consts.VDPA_TYPE_VHOST)),
}


def static_checks(p: PolicySpec, nics: SupportedNics, dev_mode: bool) -> None:
    _check_schema(p)
    _check_resource_name(p.resource_name)
    if p.nic.empty:
        raise Denied(
            "spec.nicSelector",
            "at least one of these parameters (vendor, deviceID, pfNames, rootDevices or netFilter) has to be "
            f"defined in nicSelector in CR {p.name}",
        )
    if p.nic.net_filter:
        _check_net_filter_exclusive(p)
    if not dev_mode:
        _check_supported_selector(p, nics)
    for i, entry in enumerate(p.nic.pf_names):
        try:
            validate_pf_name(entry, p.num_vfs)
        except PfNameError as exc:
            raise Denied(f"spec.nicSelector.pfNames[{i}]", str(exc)) from None
    if p.device_type == consts.DEVICE_TYPE_VFIO_PCI and p.is_rdma:
        raise Denied(
            "spec.isRdma",
            "'deviceType: vfio-pci' conflicts with 'isRdma: true'; Set 'deviceType' to (string)'netdevice' "
            "Or Set 'isRdma' to (bool)'false'",
        )
    if p.eswitch_mode == consts.ESWITCH_MODE_SWITCHDEV and p.link_type and p.link_type.lower() != "eth":
        raise Denied("spec.eSwitchMode", "'eSwitchMode: switchdev' can be used only with ethernet links")
    if p.vdpa_type:
        if p.device_type != consts.DEVICE_TYPE_NETDEVICE:
            raise Denied(
                "spec.vdpaType",
                f"'deviceType: {p.device_type}' conflicts with '{p.vdpa_type}'; Set 'deviceType' to "
                "(string)'netdevice' Or Remove 'vdpaType'",
            )
        if p.eswitch_mode != consts.ESWITCH_MODE_SWITCHDEV:
            raise Denied("spec.vdpaType", "vdpa requires the device to be configured in switchdev mode")
    if p.has_bridge:
        if p.eswitch_mode != consts.ESWITCH_MODE_SWITCHDEV:
            raise Denied(
                "spec.bridge", "software bridge management requires the device to be configured in switchdev mode"
            )
        if p.externally_managed:
            raise Denied(
                "spec.bridge", "software bridge management can't be used when the device externally managed"
            )


def _check_schema(p: PolicySpec) -> None:
    """What the CRD schema enforces, repeated so that an object that bypassed it is still judged."""
    for attr, (path, allowed) in _ENUMS.items():
        value = getattr(p, attr)
        if value not in allowed:
            shown = ", ".join(repr(a) for a in allowed if a)
            raise Denied(path, f"unsupported value {value!r}: must be one of {shown}")
    if p.num_vfs < 0:
        raise Denied("spec.numVfs", f"numVfs({p.num_vfs}) must not be negative")
    if not consts.MIN_POLICY_PRIORITY <= p.priority <= consts.MAX_POLICY_PRIORITY:
        raise Denied(
            "spec.priority",
            f"priority {p.priority} is out of range {consts.MIN_POLICY_PRIORITY}..{consts.MAX_POLICY_PRIORITY}",
        )
    if p.mtu < 0:
        raise Denied("spec.mtu", f"mtu {p.mtu} must be at least 1")


def _check_resource_name(name: str) -> None:
    if not name:
        raise Denied("spec.resourceName", "is required and must not be empty")
    if len(name) > consts.RESOURCE_NAME_MAX_LENGTH:
        raise Denied(
            "spec.resourceName",
            f'resource name "{name}" is {len(name)} characters long; at most '
            f"{consts.RESOURCE_NAME_MAX_LENGTH} are allowed",
        )
    if not _RESOURCE_NAME.match(name):
        raise Denied(
            "spec.resourceName",
            f'resource name "{name}" contains invalid characters, the accepted syntax of the regular '
            f'expressions is: "{consts.RESOURCE_NAME_PATTERN}"',
        )


def _check_net_filter_exclusive(p: PolicySpec) -> None:
    nic = p.nic
    if nic.vendor or nic.device_id or nic.pf_names or nic.root_devices:
        raise Denied(
            "spec.nicSelector.netFilter",
            "netFilter can't be combined with vendor, deviceID, pfNames or rootDevices in the nicSelector",
        )
    if p.eswitch_mode:
        raise Denied("spec.eSwitchMode", "eSwitchMode can't be set together with nicSelector.netFilter")
    if p.has_bridge:
        raise Denied("spec.bridge", "bridge can't be set together with nicSelector.netFilter")
    if p.link_type and p.link_type.lower() != "eth":
        raise Denied("spec.linkType", f"linkType {p.link_type} can't be used with nicSelector.netFilter; only eth")


def _check_supported_selector(p: PolicySpec, nics: SupportedNics) -> None:
    vendor, device = p.nic.vendor, p.nic.device_id
    hint = " (add it to the supported-nic-ids ConfigMap, or run the webhook with DEV_MODE=TRUE)"
    if vendor:
        if not nics.is_supported_vendor(vendor):
            raise Denied("spec.nicSelector.vendor", f"vendor {vendor} is not supported{hint}")
        if device and not nics.is_supported_model(vendor, device):
            raise Denied("spec.nicSelector.deviceID", f"vendor/device {vendor}/{device} is not supported{hint}")
    elif device and not nics.is_supported_device(device):
        raise Denied("spec.nicSelector.deviceID", f"device {device} is not supported{hint}")
