"""One network to run for a pod: its configuration with the injected keys, and the call's extras.

What goes where, as Multus does it:
- `deviceID` and `pciBusID` (the device plugin's PCI address) go into the config itself, at the top of a
  conf or into every plugin of a conflist, because sriov-cni reads them there;
- `cni-args` from the annotation merge into each plugin's `args.cni`;
- `mac`, `ips`, `deviceID`, `infinibandGUID`, `portMappings`, `bandwidth`, `CNIDeviceInfoFile` are
  capability args: the invoker puts each into a plugin's `runtimeConfig` only when the plugin declares
  that capability.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from sriovop.cni.attach import netconf
from sriovop.cni.attach.annotation import NetworkSelection
from sriovop.cni.attach.netconf import NetConf


@dataclass
class Delegate:
    network: str  # `ns/nad` for an attachment, the conf's name for the default network
    ifname: str
    conf: NetConf
    capability_args: dict[str, Any] = field(default_factory=dict)
    master: bool = False
    resource_name: str = ""
    device_id: str = ""
    device_info_file: str = ""
    result: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"network": self.network, "ifname": self.ifname, "conf": self.conf.to_json(),
                "capabilityArgs": self.capability_args, "master": self.master,
                "resourceName": self.resource_name, "deviceID": self.device_id,
                "deviceInfoFile": self.device_info_file, "result": self.result}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Delegate:
        return cls(network=obj["network"], ifname=obj["ifname"], conf=netconf.parse(obj["conf"]),
                   capability_args=dict(obj.get("capabilityArgs") or {}), master=bool(obj.get("master")),
                   resource_name=obj.get("resourceName", ""), device_id=obj.get("deviceID", ""),
                   device_info_file=obj.get("deviceInfoFile", ""), result=obj.get("result"))


def _inject(plugin: dict[str, Any], device_id: str, cni_args: dict[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(plugin)
    if device_id:
        out["deviceID"] = device_id
        out["pciBusID"] = device_id
    if cni_args:
        args: dict[str, Any] = out["args"] if isinstance(out.get("args"), dict) else {}
        cni: dict[str, Any] = args["cni"] if isinstance(args.get("cni"), dict) else {}
        args["cni"] = {**cni, **cni_args}
        out["args"] = args
    return out


def injected(conf: NetConf, device_id: str, cni_args: dict[str, Any] | None) -> NetConf:
    return conf.with_plugins([_inject(p, device_id, cni_args) for p in conf.plugins])


def capability_args(selection: NetworkSelection, device_id: str, device_info_file: str) -> dict[str, Any]:
    caps: dict[str, Any] = {}
    if selection.port_mappings:
        caps["portMappings"] = [dict(p) for p in selection.port_mappings]
    if selection.bandwidth:
        caps["bandwidth"] = dict(selection.bandwidth)
    if selection.ips:
        caps["ips"] = list(selection.ips)
    if selection.mac:
        caps["mac"] = selection.mac
    if selection.infiniband_guid:
        caps["infinibandGUID"] = selection.infiniband_guid
    if device_id:
        caps["deviceID"] = device_id
    if device_info_file:
        caps["CNIDeviceInfoFile"] = device_info_file
    return caps


def attachment(selection: NetworkSelection, conf: NetConf, index: int, resource_name: str, device_id: str,
               device_info_file: str) -> Delegate:
    """The delegate for the index-th extra network (1-based): interface `net<index>` unless requested.
    A deviceID in the annotation wins over the one the device plugin allocated."""
    chosen = selection.device_id or device_id
    return Delegate(
        network=selection.key, ifname=selection.interface or f"net{index}",
        conf=injected(conf, chosen, selection.cni_args),
        capability_args=capability_args(selection, chosen, device_info_file if chosen else ""),
        resource_name=resource_name, device_id=chosen, device_info_file=device_info_file if chosen else "",
    )
