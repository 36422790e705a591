"""Network specs upstream admits, but that cannot work as written.

Upstream's webhook checks only `networkNamespace` on SriovNetwork, SriovIBNetwork and OVSNetwork, and
its controller renders whatever its template turns into valid JSON and then says Ready=True. Clusters
therefore carry YAML with an empty `resourceName`, `capabilities` that are not an object of booleans,
an `ipam` without a `type`, and so on. Denying those, or holding Ready at False, would break
`kubectl apply` and `kubectl wait --for condition=Ready` for manifests that work upstream. So they are
admitted with an admission warning (the webhook) and reported on a separate `SpecWarning` condition
(the controller), Ready staying what upstream says; both read the same list from here so the two
messages never disagree.

Values that cannot be rendered correctly (raw JSON fields that do not parse, a string that breaks out of
the CNI config's JSON string) come first in the list (`sriovop.api.v1.unrenderable`). Upstream admits
those too, so they are admission warnings as well; the difference is that the controller renders no
NetworkAttachmentDefinition for them and says so on Ready=False.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from sriovop.api.v1.unrenderable import QUOTED_FIELDS, unrenderable_fields

#: The condition type that carries these problems (Ready is left to what upstream would say).
CONDITION_SPEC_WARNING: Final = "SpecWarning"
#: Its reason while the spec has a problem from the list below.
REASON_NETWORK_SPEC_INVALID: Final = "NetworkSpecInvalid"

_BRIDGE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*$")
_INTERFACE_TYPE = re.compile(r"^[a-zA-Z0-9_-]+$")


def _parsed(spec: Mapping[str, Any], field: str, as_list: bool = False) -> tuple[bool, Any]:
    """(set, value) of a raw-JSON string field; value is None when it does not parse (reported by
    `unrenderable_fields`). `as_list` reads a comma-separated run of values, as metaPlugins is spliced
    into a list."""
    text = spec.get(field)
    if not isinstance(text, str) or not text.strip():
        return False, None
    try:
        return True, json.loads(f"[{text}]" if as_list else text)
    except ValueError:
        return True, None


def _capabilities(spec: Mapping[str, Any]) -> list[str]:
    present, value = _parsed(spec, "capabilities")
    if not present or value is None:
        return []
    if isinstance(value, dict) and all(isinstance(v, bool) for v in value.values()):
        return []
    return ["spec.capabilities: should be a JSON object with boolean values, e.g. '{\"mac\": true}'; it is "
            "passed to the CNI as written, which ignores or rejects other values"]


def _ipam(spec: Mapping[str, Any]) -> list[str]:
    present, value = _parsed(spec, "ipam")
    if not present or value is None:
        return []
    if not isinstance(value, dict):
        return ["spec.ipam: should be a JSON object such as '{\"type\": \"host-local\", ...}'; the CNI "
                "fails every pod on anything else"]
    if value and (not isinstance(value.get("type"), str) or not value["type"].strip()):
        return ['spec.ipam: has no non-empty string "type"; the CNI cannot pick an IPAM plugin, so pods '
                "attaching to this network fail (use {} for no IPAM)"]
    return []


def _meta_plugins(spec: Mapping[str, Any]) -> list[str]:
    present, value = _parsed(spec, "metaPlugins", as_list=True)
    if not present or value is None:
        return []
    problems = []
    for i, plugin in enumerate(value):
        if not isinstance(plugin, dict):
            problems.append(f"spec.metaPlugins: element {i} should be a JSON object (a CNI plugin config)")
        elif not isinstance(plugin.get("type"), str) or not plugin["type"].strip():
            problems.append(f'spec.metaPlugins: element {i} has no non-empty string "type"; the chain fails')
    return problems


def _quoted(kind: str, spec: Mapping[str, Any], reported: str) -> list[str]:
    """Backslashes that are valid JSON escapes (the others are in `reported`, the unrenderable list)."""
    problems = []
    for field in QUOTED_FIELDS.get(kind, ()):
        value = spec.get(field)
        if isinstance(value, str) and "\\" in value and f"spec.{field}:" not in reported:
            problems.append(f"spec.{field}: contains a backslash, which the CNI config reads as a JSON escape "
                            "(the CNI sees a different value than written)")
    return problems


def _ovs(spec: Mapping[str, Any]) -> list[str]:
    problems = []
    bridge = spec.get("bridge")
    if isinstance(bridge, str) and bridge and (len(bridge) > 15 or not _BRIDGE.match(bridge)):
        problems.append("spec.bridge: is not a valid OVS bridge name (at most 15 characters; letters, digits, "
                        "dots, underscores and dashes, starting with a letter or digit); OVS refuses it")
    itype = spec.get("interfaceType")
    if isinstance(itype, str) and itype and (len(itype) > 32 or not _INTERFACE_TYPE.match(itype)):
        problems.append("spec.interfaceType: is not an OVS interface type (letters, digits, underscores or "
                        "dashes, at most 32 characters)")
    mtu = spec.get("mtu")
    if isinstance(mtu, int) and mtu > 65535:
        problems.append(f"spec.mtu: {mtu} is above 65535, which no link accepts")
    return problems


def network_spec_problems(spec: Mapping[str, Any], kind: str = "SriovNetwork") -> list[str]:
    """`field: why` for each problem upstream lets through; empty when the spec is sound. The values that
    cannot be rendered at all come first.

    `kind` is the network's kind name (SriovNetwork, SriovIBNetwork or OVSNetwork)."""
    problems = unrenderable_fields(spec, kind)
    reported = "; ".join(problems)
    if not str(spec.get("resourceName") or "").strip():
        problems.append("spec.resourceName: is empty; no device-plugin resource backs this network, so pods "
                        "attaching to it get no VF")
    problems += _capabilities(spec) + _ipam(spec) + _meta_plugins(spec) + _quoted(kind, spec, reported)
    if kind == "OVSNetwork":
        problems += _ovs(spec)
    return problems
