"""Which kernel the node commands drive: this machine's, or a simulated SR-IOV host's.

The composition-root half of `sriovop.host.kernel_access`: the host layer, the daemon, the CNI, the
device plugin and the exporter take a kernel access as an argument and never look at what a root is;
the commands decide here, from `--simulated-host` (and the config daemon's $SRIOVOP_SIMULATED_HOST).
Everything heavy is imported when a command runs, not for `--help`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from sriovop.cni.vfkernel import VfKernel
    from sriovop.host.kernel_access import KernelAccess

F = TypeVar("F", bound=Callable[..., Any])

SIMULATED_HOST_FLAG = "--simulated-host"


def simulated_host_option(what: str) -> Callable[[F], F]:
    """--simulated-host: `what` (the root option's name) is a simulated SR-IOV host (development only)."""
    return click.option(SIMULATED_HOST_FLAG, "simulated_host", is_flag=True, default=False,
                        help=f"Development only: {what} is a simulated SR-IOV host (`python -m sriovop.sim serve`); "
                             "its simulator answers the kernel's side.")


def refuse_unflagged(root: Path) -> None:
    """A simulated tree driven as a real host would take plain file writes and mean nothing."""
    from sriovop.sim.endpoint import is_simulated_tree

    if is_simulated_tree(root):
        raise click.UsageError(f"{root} is a simulated SR-IOV host's root: pass {SIMULATED_HOST_FLAG} to drive it")


def kernel_access(root: Path, simulated: bool) -> KernelAccess:
    """The host layer's kernel access for `root`."""
    if simulated:
        from sriovop.sim.access import SimKernelAccess

        return SimKernelAccess(root)
    refuse_unflagged(root)
    from sriovop.host.kernel_access import RealKernelAccess

    return RealKernelAccess()


def vf_kernel(root: Path, simulated: bool) -> VfKernel | None:
    """The CNI's PF-side seam for `root`; None: PF netlink on this host (the CNI's default)."""
    if not simulated:
        refuse_unflagged(root)
        return None
    from sriovop.sim.vfkernel import SimVfKernel

    try:
        return SimVfKernel(root)
    except FileNotFoundError as exc:
        raise click.UsageError(f"{SIMULATED_HOST_FLAG}: {exc}") from None
