"""Plugins: `generic` (or `virtual` on OpenStack/AWS) is the main plugin; vendor plugins are added for
the vendors present on the node (`mellanox` can be disabled, like upstream's --disable-plugins)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sriovop.host.apply import ApplyOptions
from sriovop.host.host import Host
from sriovop.host.plugins.base import Decision, Plugin
from sriovop.host.plugins.generic import GenericPlugin
from sriovop.host.plugins.intel import VENDOR as INTEL
from sriovop.host.plugins.intel import IntelPlugin
from sriovop.host.plugins.mellanox import VENDOR as MELLANOX
from sriovop.host.plugins.mellanox import MellanoxPlugin
from sriovop.host.plugins.virtual import VirtualPlugin
from sriovop.host.steps import StepHook

__all__ = ["Decision", "GenericPlugin", "IntelPlugin", "MellanoxPlugin", "Plugin", "VirtualPlugin",
           "load_plugins"]


def load_plugins(
    host: Host,
    status_interfaces: list[dict[str, Any]],
    *,
    platform: str = "baremetal",
    disabled: Iterable[str] = (),
    hook: StepHook | None = None,
    options: ApplyOptions | None = None,
) -> tuple[Plugin, list[Plugin]]:
    """Returns (main plugin, additional vendor plugins) for the NICs this node has."""
    disabled = set(disabled)
    unknown = disabled - {"mellanox"}
    if unknown:
        raise ValueError(f"--disable-plugins: only 'mellanox' can be disabled, not {sorted(unknown)}")
    main: Plugin
    if platform in ("openstack", "aws", "virtual"):
        return VirtualPlugin(host), []
    main = GenericPlugin(host, hook=hook, options=options)
    vendors = {i.get("vendor") for i in status_interfaces}
    extra: list[Plugin] = []
    if INTEL in vendors:
        extra.append(IntelPlugin())
    if MELLANOX in vendors and "mellanox" not in disabled:
        extra.append(MellanoxPlugin(host))
    return main, extra
