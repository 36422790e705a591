"""The simulated kernel's answer to IFLA_VF_* on a PF: per-VF VLAN, QoS, protocol, rate, spoofchk,
trust and link state, kept per VF, with the refusals real drivers give.

Real PF drivers differ in what they accept; the simulator mirrors the ones that matter for a CNI's
failure paths: igb (82576) has no link-state control (EOPNOTSUPP), no minimum rate (EINVAL) and only
802.1Q (EPROTONOSUPPORT); i40e/ice/mlx5 accept all of them.
"""

from __future__ import annotations

import errno
from typing import Any

from sriovop.sim.devices import KernelError
from sriovop.sim.kernel import SimKernel

OPS = ("get_vf_config", "set_vf_config")
DEFAULTS: dict[str, Any] = {"vlan": 0, "vlan_qos": 0, "vlan_proto": "802.1q", "spoofchk": True, "trust": False,
                            "link_state": "auto", "min_tx_rate": 0, "max_tx_rate": 0}


def _check(driver: str, key: str, value: Any) -> None:
    if driver != "igb":
        return
    if key == "link_state":
        raise KernelError(errno.EOPNOTSUPP, "igb: setting a VF's link state is not supported")
    if key == "min_tx_rate" and value:
        raise KernelError(errno.EINVAL, "igb: a VF minimum tx rate is not supported")
    if key == "vlan_proto" and value != "802.1q":
        raise KernelError(errno.EPROTONOSUPPORT, "igb: only 802.1Q VF VLANs are supported")


def handle(kernel: SimKernel, req: dict[str, Any]) -> dict[str, Any]:
    with kernel.lock:
        pf, vf = kernel._pf_vf(str(req["pf"]), int(req["vf"]))
        state: dict[str, Any] = kernel.vf_configs.setdefault(vf.pci, dict(DEFAULTS))
        if req["op"] == "get_vf_config":
            return {"ok": True, "config": {**state, "admin_mac": vf.admin_mac or "00:00:00:00:00:00"}}
        changes = dict(req["changes"])
        # The admin MAC may come in the same request, as in one IFLA_VF_INFO; all or nothing is applied.
        mac = changes.pop("admin_mac", None)
        for key, value in changes.items():
            if key not in DEFAULTS:
                raise KernelError(errno.EINVAL, f"unknown VF attribute {key!r}")
            _check(pf.driver, key, value)
        if mac is not None:
            kernel.set_vf_mac(str(req["pf"]), int(req["vf"]), str(mac))
        state.update(changes)
        return {"ok": True}
