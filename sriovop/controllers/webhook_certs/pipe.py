"""The messages between the operator and its certificate child process: pickled dicts over a pipe.
Both ends are the same installed code, so nothing untrusted is ever unpickled."""

from __future__ import annotations

import pickle
from typing import IO, Any

#: The child's exit code when the parent ended the pass first: it closed the pipe because it stopped,
#: or because a call it performs for the child failed on its side (it reports that error itself).
PARENT_GONE = 3


def send(stream: IO[bytes], message: dict[str, Any]) -> None:
    pickle.dump(message, stream, protocol=pickle.HIGHEST_PROTOCOL)
    stream.flush()


def receive(stream: IO[bytes]) -> dict[str, Any]:
    """The next message; EOFError when the other end has gone."""
    message: dict[str, Any] = pickle.load(stream)
    return message
