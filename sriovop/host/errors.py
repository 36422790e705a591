"""Typed host errors.

The daemon copies these into `status.lastSyncError`, so every apply failure names the PF and the step it
was in: an operator reading the NodeState should know which NIC to look at and what was being done.
"""

from __future__ import annotations


class HostError(Exception):
    """Base class for everything the host layer raises on purpose."""


class DiscoveryError(HostError):
    """The host could not be read at all (e.g. no sysfs under the root)."""


class ApplyError(HostError):
    """One apply step failed on one PF.

    `errno` keeps the kernel's answer (EBUSY, ERANGE, ENOMEM, ...) so callers can react (ENOMEM on
    sriov_numvfs means the kernel needs `pci=realloc`) without parsing the message.
    """

    def __init__(self, pf: str, step: str, reason: str, *, errno: int | None = None) -> None:
        self.pf = pf
        self.step = step
        self.reason = reason
        self.errno = errno
        super().__init__(f"pf {pf}: step {step}: {reason}")


class ApplyErrors(HostError):
    """Several PFs failed (parallel configuration joins the errors like upstream)."""

    def __init__(self, errors: list[ApplyError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


class ValidationError(HostError):
    """The requested spec cannot be applied as given (bad field value)."""
