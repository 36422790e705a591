"""The one exception every policy rule raises: the JSON path of the field and the reason."""

from __future__ import annotations


class Denied(Exception):
    """A rule rejected the object: `field` is the JSON path of the offending field, `reason` why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason
