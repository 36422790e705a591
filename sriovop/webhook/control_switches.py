"""The pod injector's switches: flags at start, overridden on the fly by the `nri-control-switches` ConfigMap.

Upstream's network-resources-injector starts from its flags (`--injectHugepageDownApi`,
`--honor-resources`, `--network-resource-name-keys`) and then follows the ConfigMap
`nri-control-switches` in its own namespace. Its `config.json` holds:

    {"features": {"enableHugePageDownApi": true, "enableHonorExistingResources": false},
     "user-defined-injections": {"<pod label>": {"op": "add", "path": "/metadata/annotations",
                                                  "value": {"k8s.v1.cni.cncf.io/networks": "sriov-net"}}}}

A feature absent from the map, a missing map or a missing ConfigMap means the flag's value. A user
injection adds its annotations to pods whose label `<pod label>` is "true" (any case). We also read
`network-resource-name-keys` (a list, or the flag's comma-separated string) from the same file, so the
keys can change without a restart; upstream only has the flag.

Bad contents never take the webhook down or change what the good parts say: each bad field is
reported (`ConfigMap ns/nri-control-switches data[config.json].features.x: ...`) and keeps its flag
value, and a bad injection entry is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from sriovop.api.v1 import consts

CONFIGMAP_NAME: Final = consts.INJECTOR_CONTROL_SWITCHES_CONFIGMAP
CONFIG_KEY: Final = "config.json"
FEATURES_KEY: Final = "features"
HUGEPAGE_DOWN_API: Final = "enableHugePageDownApi"
HONOR_EXISTING_RESOURCES: Final = "enableHonorExistingResources"
RESOURCE_NAME_KEYS: Final = "network-resource-name-keys"
USER_INJECTIONS: Final = "user-defined-injections"
#: The only target upstream lets a user injection patch.
ANNOTATIONS_PATH: Final = "/metadata/annotations"


def _frozen(value: Mapping[str, Mapping[str, str]]) -> Mapping[str, Mapping[str, str]]:
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in value.items()})


@dataclass(frozen=True, slots=True)
class ControlSwitches:
    """What the injector does for one request.

    `user_injections` maps a pod label key to the annotations added to pods carrying that label as
    "true" (upstream's user-defined injections, path /metadata/annotations, op add)."""

    hugepage_down_api: bool = False
    honor_resources: bool = False
    resource_name_keys: tuple[str, ...] = (consts.NAD_RESOURCE_NAME_ANNOTATION,)
    user_injections: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _frozen({}))


def split_keys(value: str) -> tuple[str, ...]:
    """`--network-resource-name-keys` as upstream splits it: on commas, each trimmed, empties dropped."""
    return tuple(k.strip() for k in value.split(",") if k.strip())


def _where(namespace: str, path: str) -> str:
    return f"ConfigMap {namespace}/{CONFIGMAP_NAME} data[{CONFIG_KEY}]{path}"


def _features(doc: Mapping[str, Any], initial: ControlSwitches, where: str,
              problems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    features = doc.get(FEATURES_KEY)
    if features is None:
        return out
    if not isinstance(features, dict):
        problems.append(f"{where}.{FEATURES_KEY}: must be an object of feature: true|false; every feature "
                        "keeps its flag value")
        return out
    for key, attr in ((HUGEPAGE_DOWN_API, "hugepage_down_api"), (HONOR_EXISTING_RESOURCES, "honor_resources")):
        if key not in features:
            continue
        if isinstance(features[key], bool):
            out[attr] = features[key]
        else:
            problems.append(f"{where}.{FEATURES_KEY}.{key}: must be true or false, got {features[key]!r}; "
                            f"kept {str(getattr(initial, attr)).lower()}")
    return out


def _resource_name_keys(doc: Mapping[str, Any], initial: ControlSwitches, where: str,
                        problems: list[str]) -> dict[str, Any]:
    raw = doc.get(RESOURCE_NAME_KEYS)
    if raw is None:
        return {}
    if isinstance(raw, str):
        keys = split_keys(raw)
    elif isinstance(raw, list) and all(isinstance(k, str) for k in raw):
        keys = tuple(k.strip() for k in raw if k.strip())
    else:
        keys = ()
    if not keys:
        problems.append(f"{where}.{RESOURCE_NAME_KEYS}: must be a non-empty list of annotation keys (or a "
                        f"comma-separated string), got {raw!r}; kept {list(initial.resource_name_keys)}")
        return {}
    return {"resource_name_keys": keys}


def _injections(doc: Mapping[str, Any], where: str, problems: list[str]) -> dict[str, Any]:
    raw = doc.get(USER_INJECTIONS)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{where}.{USER_INJECTIONS}: must be an object of <pod label>: <JSON patch>; "
                        "no user-defined injections")
        return {}
    out: dict[str, dict[str, str]] = {}
    for label, patch in raw.items():
        at = f"{where}.{USER_INJECTIONS}.{label}"
        if not isinstance(patch, dict):
            problems.append(f"{at}: must be a JSON patch object; skipped")
        elif patch.get("path") != ANNOTATIONS_PATH:
            problems.append(f"{at}.path: {patch.get('path')!r} is not supported, only {ANNOTATIONS_PATH}; skipped")
        elif patch.get("op") != "add":
            problems.append(f"{at}.op: {patch.get('op')!r} is not supported, only add; skipped")
        elif not isinstance(patch.get("value"), dict) or not all(
                isinstance(v, str) for v in patch["value"].values()):
            problems.append(f"{at}.value: must be an object of annotation: string; skipped")
        else:
            out[str(label)] = dict(patch["value"])
    return {"user_injections": _frozen(out)}


def parse_control_switches(data: Mapping[str, Any] | None, initial: ControlSwitches,
                           namespace: str) -> tuple[ControlSwitches, list[str]]:
    """The switches the ConfigMap's `data` asks for on top of `initial` (the flags), and one message per
    field it could not use (that field keeps its `initial` value). `None` data means no ConfigMap."""
    problems: list[str] = []
    if data is None:
        return initial, problems
    text = data.get(CONFIG_KEY)
    if text is None:
        return initial, problems
    where = _where(namespace, "")
    try:
        doc = json.loads(text) if isinstance(text, str) else None
    except ValueError as exc:
        problems.append(f"{where}: is not JSON ({exc}); every switch keeps its flag value")
        return initial, problems
    if not isinstance(doc, dict):
        problems.append(f"{where}: must be a JSON object; every switch keeps its flag value")
        return initial, problems
    changes = {**_features(doc, initial, where, problems), **_resource_name_keys(doc, initial, where, problems),
               **_injections(doc, where, problems)}
    return replace(initial, **changes), problems
