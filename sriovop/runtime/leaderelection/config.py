"""Elector settings and client-go's validation of them (NewLeaderElector)."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass

JITTER_FACTOR = 1.2

DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0


def default_identity() -> str:
    """controller-runtime's choice: hostname plus a random suffix, unique per process start."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Durations are seconds.

    LeaseDuration: how long followers wait, from when they last saw the record change, before taking
    over. RenewDeadline: how long the leader keeps trying to renew before it gives up (and stops
    writing). RetryPeriod: the pause between attempts. LeaseDuration > RenewDeadline leaves a gap in
    which the old leader has already stopped and nobody has yet taken over.
    """

    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    release_on_cancel: bool = True
    name: str = ""
    watch: bool = True

    def validate(self) -> None:
        if self.lease_duration <= 0:
            raise ValueError("lease_duration must be greater than zero")
        if self.renew_deadline <= 0:
            raise ValueError("renew_deadline must be greater than zero")
        if self.retry_period <= 0:
            raise ValueError("retry_period must be greater than zero")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"lease_duration ({self.lease_duration}s) must be greater than renew_deadline "
                f"({self.renew_deadline}s)")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"renew_deadline ({self.renew_deadline}s) must be greater than retry_period*JitterFactor "
                f"({self.retry_period}s*{JITTER_FACTOR})")


