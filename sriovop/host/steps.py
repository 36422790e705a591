"""Apply step names and the step hook.

Every apply step has a stable name; errors carry it (so lastSyncError says what was being done) and a
hook is called with it before the step runs (so crash-safety tests can kill the daemon at exactly that
point). `crash_hook_from_env` is that kill switch for a daemon running as a separate process.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Final

#: Called as hook(step, pf_pci_address) before each step (VF steps run once per VF).
StepHook = Callable[[str, str], None]

CHECK_TOTALVFS: Final = "check-totalvfs"
SET_ESWITCH_MODE: Final = "set-eswitch-mode"
WRITE_UDEV_RULE: Final = "write-udev-rule"
CLEAR_NUMVFS: Final = "clear-numvfs"
WRITE_NUMVFS: Final = "write-numvfs"
WAIT_VFS: Final = "wait-vfs"
SET_PF_MTU: Final = "set-mtu"
BIND_DRIVER: Final = "bind-driver"
WAIT_VF_NETDEV: Final = "wait-vf-netdev"
SET_VF_MAC: Final = "set-vf-mac"
SET_VF_MTU: Final = "set-vf-mtu"
LINK_UP: Final = "link-up"
WRITE_RECORD: Final = "write-record"
RESET_NUMVFS: Final = "reset-numvfs"
RESTORE_MTU: Final = "restore-mtu"
REMOVE_RECORD: Final = "remove-record"
CHECK_EXTERNAL: Final = "check-externally-managed"
ENABLE_TC_OFFLOAD: Final = "enable-hw-tc-offload"
SET_FLOW_STEERING: Final = "set-flow-steering-mode"
UNBIND_VFS: Final = "unbind-vfs"
DELETE_VDPA: Final = "delete-vdpa"
CREATE_VDPA: Final = "create-vdpa"
RELOAD_UDEV: Final = "reload-udev-rules"
DETACH_OVS_UPLINK: Final = "detach-ovs-uplink"
CONFIGURE_OVS_BRIDGE: Final = "configure-ovs-bridge"
FIND_PF: Final = "find-pf"
SET_VF_GUID: Final = "set-vf-guid"
LOAD_MODULES: Final = "load-kernel-modules"

#: The steps every owned PF goes through, in order (VF steps repeat per VF).
APPLY_STEPS: Final = (
    CHECK_TOTALVFS, WRITE_UDEV_RULE, CLEAR_NUMVFS, WRITE_NUMVFS, WAIT_VFS, SET_PF_MTU,
    WAIT_VF_NETDEV, SET_VF_MAC, BIND_DRIVER, SET_VF_MTU, LINK_UP, WRITE_RECORD,
)
RESET_STEPS: Final = (RESET_NUMVFS, RESTORE_MTU, REMOVE_RECORD)
#: Steps only some specs reach (switchdev: offload, eswitch mode, vDPA, representor renames).
OTHER_STEPS: Final = (SET_ESWITCH_MODE, CHECK_EXTERNAL, FIND_PF, ENABLE_TC_OFFLOAD, SET_FLOW_STEERING,
                      UNBIND_VFS, DELETE_VDPA, CREATE_VDPA, RELOAD_UDEV, DETACH_OVS_UPLINK, CONFIGURE_OVS_BRIDGE,
                      SET_VF_GUID, LOAD_MODULES)

CRASH_ENV: Final = "SRIOVOP_CRASH_AT_STEP"


def noop_hook(step: str, pf: str) -> None:
    return None


def crash_hook_from_env(env: dict[str, str] | None = None) -> StepHook | None:
    """`SRIOVOP_CRASH_AT_STEP=<step>[@<pf>][#<n>]`: SIGKILL this process before the n-th (default 1st)
    occurrence of the step (on that PF). SIGKILL, not an exception: nothing gets to clean up, exactly
    like a node losing power or the OOM killer."""
    spec = (env if env is not None else dict(os.environ)).get(CRASH_ENV, "")
    if not spec:
        return None
    nth = 1
    if "#" in spec:
        spec, count = spec.rsplit("#", 1)
        nth = int(count)
    step, _, pf = spec.partition("@")
    known = APPLY_STEPS + RESET_STEPS + OTHER_STEPS
    if step not in known:
        raise ValueError(f"{CRASH_ENV}: unknown step {step!r}; known: {', '.join(known)}")
    seen = 0

    def hook(s: str, p: str) -> None:
        nonlocal seen
        if s == step and (not pf or p == pf):
            seen += 1
            if seen >= nth:
                os.kill(os.getpid(), signal.SIGKILL)

    return hook
