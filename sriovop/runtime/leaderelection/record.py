"""The leader-election record and its mapping onto a coordination.k8s.io/v1 Lease spec.

Timestamps are kept as the strings the server returned: client-go decides "the record changed" by
comparing raw records, so a value round-tripped through a parser must not look different.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


def format_micro_time(at: datetime) -> str:
    """metav1.MicroTime's wire format: RFC 3339 with exactly six fractional digits, in UTC."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(value: str) -> datetime:
    """Accepts MicroTime and plain RFC 3339 (any fraction, Z or an offset)."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    if "." in text:  # fromisoformat wants 3 or 6 fractional digits; normalise to 6
        head, rest = text.split(".", 1)
        n = 0
        while n < len(rest) and rest[n].isdigit():
            n += 1
        digits, tz = rest[:n], rest[n:]
        text = f"{head}.{(digits + '000000')[:6]}{tz}"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"lease time {value!r} is not RFC 3339: {exc}") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease_spec(cls, spec: Mapping[str, Any] | None) -> LeaderElectionRecord:
        spec = spec or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_lease_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec
