"""The node side's contact with the machine: discovery, apply, netlink, kernel args, host state files.

Everything takes a host root (`/` on a plain host, `/host` in the daemon container, a simulated tree in
tests and the demo). Public API: `Host`, `Applier`, `make_plan`, the errors, the step names.
"""

from sriovop.host.apply import Applier, ApplyOptions, ApplyResult
from sriovop.host.errors import ApplyError, ApplyErrors, DiscoveryError, HostError, ValidationError
from sriovop.host.host import Host
from sriovop.host.plan import Plan, make_plan, need_to_update_sriov, needs_vfio

__all__ = [
    "Applier", "ApplyError", "ApplyErrors", "ApplyOptions", "ApplyResult", "DiscoveryError", "Host",
    "HostError", "Plan", "ValidationError", "make_plan", "need_to_update_sriov", "needs_vfio",
]
