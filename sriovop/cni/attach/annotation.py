"""The pod annotation `k8s.v1.cni.cncf.io/networks`, in both forms Multus accepts.

- JSON: a list of selection objects (`name`, `namespace`, `interface`, `mac`, `ips`, `deviceID`,
  `cni-args`, `default-route`, `infiniband-guid`, `portMappings`, `bandwidth`, ...). Multus decides it
  is JSON when the value holds `[`, `{` or `"`.
- Comma list: `name`, `ns/name`, `name@ifname`, `ns/name@ifname`.

Every error names the element and field (`networks[1].mac`) so the pod event says what to fix.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

from sriovop.cni.attach.fielderror import FieldError

ANNOTATION: Final = "k8s.v1.cni.cncf.io/networks"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$")
_GUID = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){7}$|^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){19}$")
IFNAMSIZ: Final = 16


class AnnotationError(FieldError):
    """The annotation cannot be used; `field` is a path such as `networks[0].mac`."""

    where = ANNOTATION


@dataclass(frozen=True)
class NetworkSelection:
    """One requested attachment; `namespace` is already defaulted to the pod's."""

    name: str
    namespace: str
    interface: str = ""
    mac: str = ""
    ips: tuple[str, ...] = ()
    infiniband_guid: str = ""
    device_id: str = ""
    cni_args: dict[str, Any] | None = None
    default_route: tuple[str, ...] = ()
    port_mappings: tuple[dict[str, Any], ...] = ()
    bandwidth: dict[str, Any] | None = field(default=None)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def check_ifname(where: str, name: str) -> None:
    """The kernel's rule: 1-15 bytes, not `.`/`..`, no `/`, `:` or whitespace."""
    if len(name.encode()) >= IFNAMSIZ:
        raise AnnotationError(where, f"interface name {name!r} is longer than {IFNAMSIZ - 1} characters")
    if name in (".", "..") or any(c in name for c in "/:") or any(c.isspace() for c in name):
        raise AnnotationError(where, f"interface name {name!r} may not be '.', '..' or contain '/', ':' or spaces")


def _check_object_name(where: str, value: str) -> None:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise AnnotationError(where, f"{value!r} is not a DNS-1123 label (lower-case alphanumerics and '-', "
                                     "starting and ending alphanumeric, at most 63 characters)")


def parse(value: str, default_namespace: str) -> list[NetworkSelection]:
    """The selections in annotation order (an empty or blank value selects nothing)."""
    if not value.strip():
        return []
    if any(c in value for c in '[{"'):
        return _parse_json(value, default_namespace)
    return _parse_text(value, default_namespace)


def _parse_text(value: str, default_namespace: str) -> list[NetworkSelection]:
    out: list[NetworkSelection] = []
    for index, raw in enumerate(value.split(",")):
        where = f"networks[{index}]"
        item = raw.strip()
        if not item:
            raise AnnotationError(where, "is empty (a stray comma?)")
        parts = item.split("/")
        if len(parts) > 2:
            raise AnnotationError(where, f"{item!r} has more than one '/' (the form is [namespace/]name[@interface])")
        namespace, rest = (parts[0].strip(), parts[1]) if len(parts) == 2 else ("", parts[0])
        at = rest.split("@")
        if len(at) > 2:
            raise AnnotationError(where, f"{item!r} has more than one '@' (the form is [namespace/]name[@interface])")
        name, ifname = at[0].strip(), (at[1].strip() if len(at) == 2 else "")
        if len(parts) == 2:
            _check_object_name(f"{where}.namespace", namespace)
        _check_object_name(f"{where}.name", name)
        if len(at) == 2:
            if not ifname:
                raise AnnotationError(f"{where}.interface", "is empty after '@'")
            check_ifname(f"{where}.interface", ifname)
        out.append(NetworkSelection(name=name, namespace=namespace or default_namespace, interface=ifname))
    return out


def _string(where: str, item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AnnotationError(f"{where}.{key}", f"must be a string, not {type(value).__name__}")
    return value


def _strings(where: str, item: dict[str, Any], key: str) -> list[str]:
    value = item.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AnnotationError(f"{where}.{key}", "must be a list of strings")
    return list(value)


def _check_ips(where: str, ips: list[str]) -> None:
    for i, ip in enumerate(ips):
        try:
            if "/" in ip:
                ipaddress.ip_interface(ip)
            else:
                ipaddress.ip_address(ip)
        except ValueError:
            raise AnnotationError(f"{where}[{i}]", f"{ip!r} is not an IP address or CIDR") from None


def _parse_json(value: str, default_namespace: str) -> list[NetworkSelection]:
    try:
        items = json.loads(value)
    except ValueError as exc:
        raise AnnotationError("networks", f"is not valid JSON: {exc}") from None
    if not isinstance(items, list):
        raise AnnotationError("networks", f"must be a JSON list of objects, not {type(items).__name__}")
    return [_selection(f"networks[{i}]", item, default_namespace) for i, item in enumerate(items)]


def _selection(where: str, item: Any, default_namespace: str) -> NetworkSelection:
    if not isinstance(item, dict):
        raise AnnotationError(where, f"must be an object, not {type(item).__name__}")
    name = _string(where, item, "name")
    if not name:
        raise AnnotationError(f"{where}.name", "is required")
    _check_object_name(f"{where}.name", name)
    namespace = _string(where, item, "namespace")
    if namespace:
        _check_object_name(f"{where}.namespace", namespace)
    interface = _string(where, item, "interface") or _string(where, item, "interfaceRequest")
    if interface:
        check_ifname(f"{where}.interface", interface)
    mac = _string(where, item, "mac")
    if mac and not _MAC.match(mac):
        raise AnnotationError(f"{where}.mac", f"{mac!r} is not a MAC address (six hex pairs separated by ':')")
    guid = _string(where, item, "infiniband-guid")
    if guid and not _GUID.match(guid):
        raise AnnotationError(f"{where}.infiniband-guid", f"{guid!r} is not an InfiniBand GUID")
    ips = _strings(where, item, "ips")
    _check_ips(f"{where}.ips", ips)
    routes = _strings(where, item, "default-route")
    for i, gw in enumerate(routes):
        if "/" in gw:
            raise AnnotationError(f"{where}.default-route[{i}]", f"{gw!r} must be a gateway IP, not a CIDR")
    _check_ips(f"{where}.default-route", routes)
    cni_args = item.get("cni-args")
    if cni_args is not None and not isinstance(cni_args, dict):
        raise AnnotationError(f"{where}.cni-args", "must be an object")
    ports = item.get("portMappings")
    if ports is not None and (not isinstance(ports, list) or not all(isinstance(p, dict) for p in ports)):
        raise AnnotationError(f"{where}.portMappings", "must be a list of objects")
    bandwidth = item.get("bandwidth")
    if bandwidth is not None and not isinstance(bandwidth, dict):
        raise AnnotationError(f"{where}.bandwidth", "must be an object")
    return NetworkSelection(
        name=name, namespace=namespace or default_namespace, interface=interface, mac=mac, ips=tuple(ips),
        infiniband_guid=guid, device_id=_string(where, item, "deviceID"), cni_args=cni_args,
        default_route=tuple(routes), port_mappings=tuple(ports or ()), bandwidth=bandwidth,
    )
