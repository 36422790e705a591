"""CNI errors as the spec returns them on stdout: `{"cniVersion", "code", "msg", "details"}`.

The kubelet turns the message of a failed ADD into the pod's FailedCreatePodSandBox event, so every
message names what failed (the network, the field) and why.
"""

from __future__ import annotations

import json
from typing import Final

# CNI spec well-known codes (1-99 reserved by the spec; 100+ belong to the plugin).
INCOMPATIBLE_VERSION: Final = 1
UNSUPPORTED_FIELD: Final = 2
UNKNOWN_CONTAINER: Final = 3
INVALID_ENVIRONMENT: Final = 4
IO_FAILURE: Final = 5
DECODING_FAILURE: Final = 6
INVALID_NETWORK_CONFIG: Final = 7
TRY_AGAIN_LATER: Final = 11
#: a delegate plugin or the API server failed (plugin-specific range)
DELEGATE_FAILED: Final = 100
API_FAILED: Final = 101


class CniError(Exception):
    """A failure to report to the runtime; `code` follows the CNI spec's error codes."""

    def __init__(self, code: int, msg: str, details: str = "") -> None:
        super().__init__(msg if not details else f"{msg}: {details}")
        self.code = code
        self.msg = msg
        self.details = details

    def to_json(self, cni_version: str) -> str:
        body: dict[str, object] = {"cniVersion": cni_version, "code": self.code, "msg": self.msg}
        if self.details:
            body["details"] = self.details
        return json.dumps(body)
