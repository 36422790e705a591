"""The `sriov` plugin's network configuration (upstream sriov-cni's NetConf), parsed and validated.

Every check runs before anything touches the host, and each failure names the field: a bad NAD must
fail the pod with a message that says what to fix, never half-apply. Key names are upstream's (Go's
JSON decoding matches untagged fields such as `MAC` case-insensitively, so `mac`/`MAC` both work).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from sriovop.cni.errors import DECODE_FAILURE, INCOMPATIBLE_VERSION, CniError, config_error

#: Result versions we can produce: the spec's current one and the older ones Multus asks for.
SUPPORTED_VERSIONS = ("0.3.0", "0.3.1", "0.4.0", "1.0.0")
VLAN_PROTOS = {"802.1q": 0x8100, "802.1ad": 0x88A8}
LINK_STATES = ("auto", "enable", "disable")
LOG_LEVELS = ("panic", "error", "warning", "info", "debug")
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
_PCI = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def lookup(raw: dict[str, Any], key: str) -> Any:
    """A key the way Go's encoding/json finds it: exact first, then case-insensitively."""
    if key in raw:
        return raw[key]
    lowered = key.lower()
    for k, v in raw.items():
        if k.lower() == lowered:
            return v
    return None


def parse_cni_args(value: str) -> dict[str, str]:
    """CNI_ARGS `K=V;K2=V2` (IgnoreUnknown and the K8S_* keys Multus sets included)."""
    out: dict[str, str] = {}
    for part in value.split(";"):
        if not part.strip():
            continue
        key, sep, val = part.partition("=")
        if not sep:
            raise CniError(DECODE_FAILURE, "invalid CNI_ARGS", f"CNI_ARGS: {part!r} is not KEY=VALUE")
        out[key.strip()] = val.strip()
    return out


def check_mac(field_name: str, value: Any) -> str:
    if not isinstance(value, str) or not _MAC.match(value):
        raise config_error(field_name, f"{value!r} is not a MAC address (xx:xx:xx:xx:xx:xx)")
    return value.lower()


def check_pci(field_name: str, value: Any) -> str:
    if not isinstance(value, str) or not _PCI.match(value):
        raise config_error(field_name, f"{value!r} is not a PCI address (dddd:bb:dd.f)")
    return value.lower()


def _int(raw: dict[str, Any], key: str, low: int, high: int | None) -> int | None:
    value = lookup(raw, key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise config_error(key, f"{value!r} is not an integer")
    if value < low or (high is not None and value > high):
        raise config_error(key, f"{value} is outside {low}-{high if high is not None else 'max'}")
    return value


def _choice(raw: dict[str, Any], key: str, choices: tuple[str, ...]) -> str | None:
    value = lookup(raw, key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value.lower() not in choices:
        raise config_error(key, f"{value!r} is not one of {', '.join(choices)}")
    return value.lower()


def check_version(raw: dict[str, Any]) -> str:
    version = raw.get("cniVersion")
    if version is None:
        return "0.1.0"  # the spec's default when absent; refused below with the list we support
    if not isinstance(version, str):
        raise config_error("cniVersion", f"{version!r} is not a string")
    if version not in SUPPORTED_VERSIONS:
        raise CniError(INCOMPATIBLE_VERSION, "incompatible CNI version",
                       f"cniVersion: {version!r} is not one of {', '.join(SUPPORTED_VERSIONS)}")
    return version


def load_json(stdin: bytes) -> dict[str, Any]:
    try:
        raw = json.loads(stdin or b"{}")
    except ValueError as e:
        raise CniError(DECODE_FAILURE, "invalid network configuration", f"stdin is not JSON: {e}") from None
    if not isinstance(raw, dict):
        raise CniError(DECODE_FAILURE, "invalid network configuration", "stdin is not a JSON object")
    return raw


@dataclass
class NetConf:
    """One validated `sriov` network configuration (plus the runtime inputs that shape it)."""

    raw: dict[str, Any]
    cni_version: str
    name: str
    device_id: str
    vlan: int | None = None
    vlan_qos: int | None = None
    vlan_proto: str | None = None
    mac: str | None = None
    spoofchk: str | None = None
    trust: str | None = None
    link_state: str | None = None
    min_tx_rate: int | None = None
    max_tx_rate: int | None = None
    ipam_type: str | None = None
    log_level: str | None = None
    log_file: str | None = None
    args: dict[str, str] = field(default_factory=dict)

    @property
    def has_rate(self) -> bool:
        return self.min_tx_rate is not None or self.max_tx_rate is not None


def parse(stdin: bytes, env: dict[str, str], *, need_device: bool = True) -> NetConf:
    """Validate the configuration of one invocation; CniError naming the field on the first problem."""
    raw = load_json(stdin)
    version = check_version(raw)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise config_error("name", "required (the network's name)")
    device = lookup(raw, "deviceID") or lookup(raw, "pciBusID")
    if not device:
        if need_device:
            raise config_error("deviceID", "VF pci addr is required (the NetworkAttachmentDefinition needs the "
                                           "k8s.v1.cni.cncf.io/resourceName annotation and the pod that resource)")
        device = ""
    else:
        device = check_pci("deviceID", device)
    vlan = _int(raw, "vlan", 0, 4094)
    qos = _int(raw, "vlanQoS", 0, 7)
    proto = _choice(raw, "vlanProto", tuple(VLAN_PROTOS))
    if qos is not None and vlan is None:
        raise config_error("vlanQoS", "needs vlan")
    if qos and not vlan:
        raise config_error("vlanQoS", f"{qos} needs a nonzero vlan")
    if proto is not None and vlan is None:
        raise config_error("vlanProto", "needs vlan")
    if proto == "802.1ad" and not vlan:
        raise config_error("vlanProto", "802.1ad needs a nonzero vlan")
    min_rate = _int(raw, "min_tx_rate", 0, None)
    max_rate = _int(raw, "max_tx_rate", 0, None)
    if min_rate and max_rate and min_rate > max_rate:
        raise config_error("min_tx_rate", f"{min_rate} is above max_tx_rate {max_rate}")
    conf = NetConf(
        raw=raw, cni_version=version, name=name, device_id=device, vlan=vlan, vlan_qos=qos,
        vlan_proto=proto or ("802.1q" if vlan is not None else None),
        spoofchk=_choice(raw, "spoofchk", ("on", "off")), trust=_choice(raw, "trust", ("on", "off")),
        link_state=_choice(raw, "link_state", LINK_STATES), min_tx_rate=min_rate, max_tx_rate=max_rate,
        log_level=_choice(raw, "logLevel", LOG_LEVELS),
    )
    log_file = lookup(raw, "logFile")
    if log_file is not None and not isinstance(log_file, str):
        raise config_error("logFile", f"{log_file!r} is not a path")
    conf.log_file = log_file or None
    ipam = raw.get("ipam")
    if ipam is not None:
        if not isinstance(ipam, dict):
            raise config_error("ipam", "must be an object")
        ipam_type = ipam.get("type")
        if ipam_type is not None and (not isinstance(ipam_type, str) or "/" in ipam_type):
            raise config_error("ipam.type", f"{ipam_type!r} is not a plugin name")
        conf.ipam_type = ipam_type or None
    conf.args = parse_cni_args(env.get("CNI_ARGS", ""))
    conf.mac = _effective_mac(raw, conf.args)
    return conf


def _effective_mac(raw: dict[str, Any], args: dict[str, str]) -> str | None:
    """Upstream's precedence, lowest to highest: `mac` in the config, CNI_ARGS MAC=, runtimeConfig.mac."""
    mac = None
    if (value := lookup(raw, "mac")) not in (None, ""):
        mac = check_mac("mac", value)
    if args.get("MAC"):
        mac = check_mac("CNI_ARGS MAC", args["MAC"])
    runtime = raw.get("runtimeConfig")
    if isinstance(runtime, dict) and runtime.get("mac"):
        mac = check_mac("runtimeConfig.mac", runtime["mac"])
    return mac
