"""The device plugin's config file: `{"resourceList": [...]}`, as the operator writes it per node into the
`device-plugin-config` ConfigMap and as upstream's README documents it.

Read the way upstream's Go types read it: keys match case-insensitively (the operator writes `IsRdma` and
`NeedVhostNet`), `resourceList: null` is an empty list, `selectors` is one object or a list of objects,
and keys the resource entry does not know (the operator's `SelectorObj`) are ignored. Stricter than
upstream where a mistake would otherwise go unnoticed: an unknown selector key, a malformed `#` range or a
wrong type is an error naming the field (`resourceList[1].selectors[0].pfNames[2]: ...`), and so is a
prefix/name pair that appears twice. Nothing is applied from a file that has any error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sriovop.deviceplugin.indexranges import IndexedName, RangeError, parse_indexed
from sriovop.deviceplugin.selectors import BOOL_FIELDS, LIST_FIELDS, VDPA_TYPES, Selector

RESOURCE_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
NET_DEVICE = "netDevice"
#: Device types of upstream's config that this plugin does not serve (it refuses them by name).
UNSUPPORTED_DEVICE_TYPES = ("accelerator", "auxNetDevice")


class ConfigError(ValueError):
    """The config file cannot be used; the message names the field and the reason."""


@dataclass(frozen=True)
class ResourceConfig:
    resource_name: str
    #: The prefix this resource registers under (its own `resourcePrefix`, else the --resource-prefix).
    prefix: str
    selectors: tuple[Selector, ...]
    exclude_topology: bool = False
    #: additionalInfo: {"*" or a PCI address: {key: value}} → the `extra` part of the _INFO env.
    additional_info: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.prefix}/{self.resource_name}"


def _lookup(obj: Mapping[str, Any], key: str) -> Any:
    """Go's encoding/json: an exact key first, else any key equal ignoring case."""
    if key in obj:
        return obj[key]
    for k, v in obj.items():
        if k.lower() == key.lower():
            return v
    return None


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: must be a list of strings, got {json.dumps(value)}")
    return tuple(value)


def _indexed(values: tuple[str, ...], where: str) -> tuple[IndexedName, ...]:
    out = []
    for i, value in enumerate(values):
        try:
            out.append(parse_indexed(value))
        except RangeError as exc:
            raise ConfigError(f"{where}[{i}]: {exc}") from None
    return tuple(out)


def _bool(value: Any, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: must be true or false, got {json.dumps(value)}")
    return value


_KNOWN_SELECTOR_KEYS = {k.lower() for k in (*LIST_FIELDS, *BOOL_FIELDS, "vdpaType")}


def parse_selector(obj: Any, where: str) -> Selector:
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: must be an object, got {json.dumps(obj)}")
    unknown = sorted(k for k in obj if k.lower() not in _KNOWN_SELECTOR_KEYS)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown netDevice selector (known: "
                          f"{', '.join((*LIST_FIELDS, *BOOL_FIELDS, 'vdpaType'))})")
    lists = {name: _strings(_lookup(obj, name), f"{where}.{name}") for name in LIST_FIELDS}
    is_rdma = _bool(_lookup(obj, "isRdma"), f"{where}.isRdma")
    vdpa = _lookup(obj, "vdpaType") or ""
    if not isinstance(vdpa, str) or vdpa not in ("", *VDPA_TYPES):
        raise ConfigError(f"{where}.vdpaType: must be one of {', '.join(VDPA_TYPES)}, got {json.dumps(vdpa)}")
    if vdpa and is_rdma:
        raise ConfigError(f"{where}.vdpaType: cannot be combined with isRdma")
    return Selector(
        vendors=lists["vendors"], devices=lists["devices"], drivers=lists["drivers"],
        pci_addresses=lists["pciAddresses"], acpi_indexes=lists["acpiIndexes"],
        pf_names=_indexed(lists["pfNames"], f"{where}.pfNames"),
        root_devices=_indexed(lists["rootDevices"], f"{where}.rootDevices"),
        link_types=lists["linkTypes"], ddp_profiles=lists["ddpProfiles"], pkeys=lists["pKeys"],
        is_rdma=is_rdma, need_vhost_net=_bool(_lookup(obj, "needVhostNet"), f"{where}.needVhostNet"),
        vdpa_type=vdpa,
    )


def _additional_info(value: Any, where: str) -> dict[str, dict[str, str]]:
    if value is None:
        return {}
    ok = isinstance(value, dict) and all(
        isinstance(v, dict) and all(isinstance(x, str) for x in v.values()) for v in value.values())
    if not ok:
        raise ConfigError(f"{where}: must map \"*\" or a PCI address to an object of strings")
    return {str(k): dict(v) for k, v in value.items()}


def parse_resource(obj: Any, where: str, default_prefix: str) -> ResourceConfig:
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: must be an object")
    name = _lookup(obj, "resourceName")
    if not isinstance(name, str) or not RESOURCE_NAME.match(name):
        raise ConfigError(f"{where}.resourceName: must match {RESOURCE_NAME.pattern}, got {json.dumps(name)}")
    device_type = _lookup(obj, "deviceType") or NET_DEVICE
    if device_type in UNSUPPORTED_DEVICE_TYPES:
        raise ConfigError(f"{where}.deviceType: {device_type!r} is not supported by sriovop device-plugin "
                          f"(it serves {NET_DEVICE} resources only)")
    if device_type != NET_DEVICE:
        raise ConfigError(f"{where}.deviceType: unknown device type {json.dumps(device_type)}")
    prefix = _lookup(obj, "resourcePrefix") or default_prefix
    if not isinstance(prefix, str):
        raise ConfigError(f"{where}.resourcePrefix: must be a string")
    raw = _lookup(obj, "selectors")
    items = raw if isinstance(raw, list) else [] if raw is None else [raw]
    where_sel = f"{where}.selectors"
    selectors = tuple(parse_selector(s, f"{where_sel}[{i}]" if isinstance(raw, list) else where_sel)
                      for i, s in enumerate(items))
    return ResourceConfig(resource_name=name, prefix=prefix, selectors=selectors,
                          exclude_topology=_bool(_lookup(obj, "excludeTopology"), f"{where}.excludeTopology"),
                          additional_info=_additional_info(_lookup(obj, "additionalInfo"), f"{where}.additionalInfo"))


def parse_config(text: str, default_prefix: str) -> list[ResourceConfig]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError("the top level must be an object with a resourceList")
    raw = _lookup(doc, "resourceList")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError("resourceList: must be a list")
    out: list[ResourceConfig] = []
    seen: dict[str, int] = {}
    for i, obj in enumerate(raw):
        resource = parse_resource(obj, f"resourceList[{i}]", default_prefix)
        if resource.full_name in seen:
            raise ConfigError(f"resourceList[{i}].resourceName: duplicate resource {resource.full_name} "
                              f"(also resourceList[{seen[resource.full_name]}])")
        seen[resource.full_name] = i
        out.append(resource)
    return out


def load_config(path: Path, default_prefix: str) -> list[ResourceConfig]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return parse_config(text, default_prefix)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
