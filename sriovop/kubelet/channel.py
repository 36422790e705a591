"""A gRPC channel to one of the kubelet's unix sockets, and the one error type callers catch.

grpcio raises `grpc.RpcError` (really a `grpc.Call`) whose code and details are methods; callers here
want a plain exception that names the socket and the method, so `call()` converts it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import grpc

T = TypeVar("T")

#: The kubelet's gRPC servers accept messages of up to 16 MiB (pod-resources answers can be large).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class KubeletApiError(RuntimeError):
    """A call to a kubelet gRPC API failed: `code` is the gRPC status name (e.g. "UNAVAILABLE")."""

    def __init__(self, socket: Path | str, method: str, code: str, details: str) -> None:
        super().__init__(f"{method} on {socket}: {code}: {details}")
        self.socket = str(socket)
        self.method = method
        self.code = code
        self.details = details


def unix_channel(socket: Path | str) -> grpc.Channel:
    """An insecure channel to `socket` (absolute path; grpcio's target is `unix://<path>`)."""
    target = f"unix://{Path(socket).absolute()}"
    return grpc.insecure_channel(target, options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)])


def call(socket: Path | str, method: str, fn: Callable[[], T]) -> T:
    """Run one RPC, turning grpc.RpcError into KubeletApiError (socket, method, status, details)."""
    try:
        return fn()
    except grpc.RpcError as exc:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
        raise KubeletApiError(socket, method, code.name if code is not None else "UNKNOWN",
                              details or "") from exc
