"""The QEMU guest driver for the e2e tests: sriovop/devcluster/vmguest.py, which `sriovop dev cluster up
--vm-nodes` uses too (one driver for both)."""

from sriovop.devcluster.vmguest import (
    HACK_VM,
    GuestError,
    GuestFactory,
    GuestVM,
    RunningGuest,
    ensure_setup,
    guest_kubeconfig,
)

__all__ = ["HACK_VM", "GuestError", "GuestFactory", "GuestVM", "RunningGuest", "ensure_setup", "guest_kubeconfig"]
