"""The messages between the operator and its certificate child process: pickled dicts over a pipe.
Both ends are the same installed code, so nothing untrusted is ever unpickled."""

from __future__ import annotations

import pickle
from typing import IO, Any


def send(stream: IO[bytes], message: dict[str, Any]) -> None:
    pickle.dump(message, stream, protocol=pickle.HIGHEST_PROTOCOL)
    stream.flush()


def receive(stream: IO[bytes]) -> dict[str, Any]:
    """The next message; EOFError when the other end has gone."""
    message: dict[str, Any] = pickle.load(stream)
    return message
