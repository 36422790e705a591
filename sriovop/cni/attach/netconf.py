"""CNI network configurations: a single plugin (`.conf`) or a list (`.conflist`), as libcni loads them.

A conf is treated as a list of one plugin, so the invoker has one code path (libcni does the same with
`ConfListFromConf`). The parsed form keeps every key of every plugin: plugin-specific fields must
reach the plugin untouched.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sriovop.cni.attach.fielderror import FieldError
from sriovop.cni.errors import INVALID_CONFIG, CniError

CONF_SUFFIXES = (".conf", ".conflist", ".json")


class NetConfError(FieldError):
    """The configuration cannot be used; `field` is a path inside it (`plugins[0].type`)."""


@dataclass(frozen=True)
class NetConf:
    name: str
    cni_version: str
    plugins: tuple[dict[str, Any], ...]
    is_list: bool

    def to_json(self) -> dict[str, Any]:
        """The configuration as it was given (a conf stays a conf), with any injected keys."""
        if not self.is_list:
            return copy.deepcopy(self.plugins[0])
        return {"cniVersion": self.cni_version, "name": self.name, "plugins": copy.deepcopy(list(self.plugins))}

    def with_plugins(self, plugins: list[dict[str, Any]]) -> NetConf:
        return NetConf(self.name, self.cni_version, tuple(plugins), self.is_list)


def _check_plugin(where: str, plugin: Any) -> dict[str, Any]:
    if not isinstance(plugin, dict):
        raise NetConfError(where, f"must be an object, not {type(plugin).__name__}")
    kind = plugin.get("type")
    if not isinstance(kind, str) or not kind:
        raise NetConfError(f"{where}.type", "is required (the plugin binary to run)")
    if "/" in kind or kind in (".", ".."):
        raise NetConfError(f"{where}.type", f"{kind!r} is not a plugin name")
    caps = plugin.get("capabilities")
    if caps is not None and not isinstance(caps, dict):
        raise NetConfError(f"{where}.capabilities", "must be an object of name: true|false")
    return plugin


def parse(data: str | bytes | dict[str, Any]) -> NetConf:
    """A conf or conflist from JSON text (or an already decoded object)."""
    if isinstance(data, dict):
        obj: Any = copy.deepcopy(data)
    else:
        try:
            obj = json.loads(data)
        except ValueError as exc:
            raise NetConfError("(root)", f"is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise NetConfError("(root)", f"must be a JSON object, not {type(obj).__name__}")
    version = obj.get("cniVersion", "")
    if not isinstance(version, str):
        raise NetConfError("cniVersion", "must be a string")
    name = obj.get("name", "")
    if not isinstance(name, str):
        raise NetConfError("name", "must be a string")
    if "plugins" in obj:
        plugins = obj["plugins"]
        if not isinstance(plugins, list) or not plugins:
            raise NetConfError("plugins", "must be a non-empty list of plugin objects")
        checked = [_check_plugin(f"plugins[{i}]", p) for i, p in enumerate(plugins)]
        return NetConf(name, version, tuple(checked), True)
    if "type" not in obj:
        raise NetConfError("type", "is required (or give a 'plugins' list)")
    return NetConf(name, version, (_check_plugin("(root)", obj),), False)


def conf_files(conf_dir: Path) -> list[Path]:
    """The configuration files libcni would consider, alphabetically (the runtime uses the first)."""
    if not conf_dir.is_dir():
        return []
    return sorted(p for p in conf_dir.iterdir() if p.is_file() and p.suffix in CONF_SUFFIXES)


def master_file(conf_dir: Path, exclude: str) -> Path:
    """The default network this plugin wraps: the alphabetically-first other conf in the directory, as
    Multus's thin entrypoint picks its master (it skips only its own file)."""
    for path in conf_files(conf_dir):
        if path.name != exclude and path.suffix in (".conf", ".conflist"):
            return path
    raise CniError(INVALID_CONFIG, f"no default network in {conf_dir}",
                   f"the directory has no .conf or .conflist besides {exclude}")


def load_file(path: Path) -> NetConf:
    try:
        return parse(path.read_text())
    except OSError as exc:
        raise CniError(INVALID_CONFIG, f"cannot read {path}", str(exc)) from None
    except NetConfError as exc:
        raise CniError(INVALID_CONFIG, f"{path}: {exc.field}", exc.reason) from None
