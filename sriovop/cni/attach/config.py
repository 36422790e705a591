"""The attach plugin's own network configuration (the file first in the node's CNI conf dir).

    {"cniVersion": "1.0.0", "name": "sriovop-attach-network", "type": "sriovop-attach",
     "kubeconfig": "/etc/cni/net.d/sriovop-attach.d/kubeconfig",
     "confDir": "/etc/cni/net.d", "delegates": [<the default network, conf or conflist>],
     "cacheDir": "/var/lib/cni/sriovop-attach", "kubeletRootDir": "/var/lib/kubelet",
     "deviceInfoDir": "/var/run/k8s.cni.cncf.io/devinfo", "capabilities": {...}}

`delegates` holds the default network as the installer found it (Multus's thin entrypoint embeds its
master the same way); without it the plugin reads the alphabetically-first other conf in `confDir` at
each ADD. It may sit alone or inside a conflist (`plugins: [<this>]`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sriovop.cni.attach import devinfo, netconf
from sriovop.cni.attach.netconf import NetConf, NetConfError
from sriovop.cni.errors import INVALID_CONFIG, CniError

PLUGIN_TYPE: Final = "sriovop-attach"
CONF_FILE: Final = "00-sriovop-attach.conflist"
DEFAULT_CACHE_DIR: Final = "/var/lib/cni/sriovop-attach"
DEFAULT_CONF_DIR: Final = "/etc/cni/net.d"
DEFAULT_KUBELET_ROOT: Final = "/var/lib/kubelet"


@dataclass(frozen=True)
class AttachConf:
    cni_version: str
    name: str
    kubeconfig: Path | None
    conf_dir: Path
    delegates: tuple[NetConf, ...]
    cache_dir: Path
    kubelet_root: Path
    device_info_dir: Path

    def default_network(self) -> NetConf:
        if self.delegates:
            return self.delegates[0]
        return netconf.load_file(netconf.master_file(self.conf_dir, CONF_FILE))


def _path(obj: dict[str, Any], key: str, default: str | None) -> Path | None:
    value = obj.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise CniError(INVALID_CONFIG, f"{PLUGIN_TYPE} config: {key}", "must be a non-empty path string")
    return Path(value)


def parse(obj: dict[str, Any]) -> AttachConf:
    """The plugin's config from the runtime's stdin (already decoded)."""
    delegates = obj.get("delegates") or []
    if not isinstance(delegates, list):
        raise CniError(INVALID_CONFIG, f"{PLUGIN_TYPE} config: delegates", "must be a list")
    parsed = []
    for i, item in enumerate(delegates):
        try:
            parsed.append(netconf.parse(item) if isinstance(item, dict) else netconf.parse(str(item)))
        except NetConfError as exc:
            raise CniError(INVALID_CONFIG, f"{PLUGIN_TYPE} config: delegates[{i}].{exc.field}",
                           exc.reason) from None
    conf_dir = _path(obj, "confDir", DEFAULT_CONF_DIR)
    cache_dir = _path(obj, "cacheDir", DEFAULT_CACHE_DIR)
    kubelet_root = _path(obj, "kubeletRootDir", DEFAULT_KUBELET_ROOT)
    info_dir = _path(obj, "deviceInfoDir", devinfo.DEFAULT_BASE)
    assert conf_dir and cache_dir and kubelet_root and info_dir  # they have defaults
    return AttachConf(
        cni_version=str(obj.get("cniVersion", "")), name=str(obj.get("name", "")),
        kubeconfig=_path(obj, "kubeconfig", None), conf_dir=conf_dir, delegates=tuple(parsed),
        cache_dir=cache_dir, kubelet_root=kubelet_root, device_info_dir=info_dir,
    )


def wrapper(default: NetConf, *, kubeconfig: Path, conf_dir: Path, cache_dir: Path | None = None,
            kubelet_root: Path | None = None, device_info_dir: Path | None = None) -> dict[str, Any]:
    """The conflist an installer writes as `00-sriovop-attach.conflist`: same cniVersion as the default
    network (the runtime then reads our result as it read the default network's), and the default
    network's capabilities, so the runtime still passes what it passed (portMappings, bandwidth...)."""
    caps: dict[str, bool] = {}
    for delegate_plugin in default.plugins:
        caps.update({k: True for k, v in (delegate_plugin.get("capabilities") or {}).items() if v is True})
    plugin: dict[str, Any] = {"type": PLUGIN_TYPE, "kubeconfig": str(kubeconfig), "confDir": str(conf_dir),
                              "delegates": [default.to_json()]}
    for key, value in (("cacheDir", cache_dir), ("kubeletRootDir", kubelet_root), ("deviceInfoDir", device_info_dir)):
        if value is not None:
            plugin[key] = str(value)
    if caps:
        plugin["capabilities"] = caps
    return {"cniVersion": default.cni_version or "1.0.0", "name": "sriovop-attach-network", "plugins": [plugin]}
