"""CNI errors: the JSON a plugin prints on stdout when it fails (CNI spec, "Error").

Codes 1-99 are the spec's (7 = invalid network config, 4 = unknown container, 11 = try again later);
100+ are plugin specific. Every error names what it is about (`details`), so a pod event that shows it
tells the operator which field or device to fix.
"""

from __future__ import annotations

import json

#: CNI spec well-known error codes.
INCOMPATIBLE_VERSION = 1
UNSUPPORTED_FIELD = 2
UNKNOWN_CONTAINER = 3
INVALID_ENV = 4
IO_FAILURE = 5
DECODE_FAILURE = 6
INVALID_CONFIG = 7
TRY_AGAIN_LATER = 11
#: Plugin specific: the device or kernel refused something.
DEVICE_FAILURE = 100


class CniError(Exception):
    """A failure reported to the runtime as CNI error JSON; `msg` is short, `details` says why."""

    def __init__(self, code: int, msg: str, details: str = "") -> None:
        super().__init__(f"{msg}: {details}" if details else msg)
        self.code = code
        self.msg = msg
        self.details = details

    def to_json(self, cni_version: str = "1.0.0") -> str:
        body: dict[str, object] = {"cniVersion": cni_version, "code": self.code, "msg": self.msg}
        if self.details:
            body["details"] = self.details
        return json.dumps(body)


def config_error(field: str, reason: str) -> CniError:
    """Invalid network configuration, naming the field (e.g. `vlan: 5000 is outside 0-4094`)."""
    return CniError(INVALID_CONFIG, f"invalid {field}", f"{field}: {reason}")


def why(err: OSError) -> str:
    """An OSError's own message without the `[Errno N]` prefix."""
    return str(err.strerror) if err.strerror else str(err)
