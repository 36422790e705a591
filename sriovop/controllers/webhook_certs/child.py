"""The child process of `isolated.py`: one pass of `WebhookCertReconciler.decide`, each of its API
calls performed by the parent (`pipe.py`). Logs go to stderr, which the child shares with the operator."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Mapping
from typing import IO, Any

from sriovop.controllers.webhook_certs.controller import WebhookCertReconciler
from sriovop.controllers.webhook_certs.pipe import PARENT_GONE, receive, send
from sriovop.logsetup import configure_logging
from sriovop.runtime.errors import ApiError, error_for
from sriovop.runtime.kinds import Kind


class PipeClient:
    """The calls the reconciler makes, each performed by the parent."""

    def __init__(self, to_parent: IO[bytes], from_parent: IO[bytes]) -> None:
        self._out = to_parent
        self._in = from_parent

    def _call(self, verb: str, kind: Kind, arg: Any, namespace: str | None) -> Any:
        send(self._out, {"call": (verb, kind, arg, namespace)})
        answer = receive(self._in)
        if "error" in answer:
            raise error_for(*answer["error"])
        return answer["ok"]

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]:
        result: Mapping[str, Any] = self._call("get", kind, name, namespace)
        return result

    def update(self, kind: Kind, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        result: Mapping[str, Any] = self._call("update", kind, obj, None)
        return result

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Mapping[str, Any]:
        result: Mapping[str, Any] = self._call("create", kind, obj, namespace)
        return result


def main() -> int:
    # The protocol owns the original stdout; anything printed goes to stderr with the logs.
    to_parent = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        return _pass(to_parent, sys.stdin.buffer)
    except (EOFError, BrokenPipeError):
        # Nobody is left to read a report; a traceback here would only put noise in the operator's log
        # as it shuts down (seen when a replica lost its lease in the middle of a pass).
        return PARENT_GONE


def _pass(to_parent: IO[bytes], from_parent: IO[bytes]) -> int:
    init = receive(from_parent)
    configure_logging(init["level"], init["format"])
    now = init["now"]
    reconciler = WebhookCertReconciler(PipeClient(to_parent, from_parent), init["namespace"], init["settings"],
                                       init["targets"], clock=lambda: now)
    try:
        decision = reconciler.decide(now)
    except ApiError as err:
        send(to_parent, {"failed": (err.code, err.message, err.status)})
        return 0
    except (EOFError, BrokenPipeError):
        raise  # the parent has gone: nothing to report to (main)
    except Exception:  # reported to the parent, which fails the pass
        send(to_parent, {"failed": (0, traceback.format_exc(), None)})
        return 1
    send(to_parent, {"decision": decision})
    return 0


if __name__ == "__main__":
    sys.exit(main())
