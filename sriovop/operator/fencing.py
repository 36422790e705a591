"""Write fencing: a replica whose lease may have expired must not write.

Every client the managers write through is a `FencedClient`: before each mutating request it asks the
election whether this replica may still write (lease renewed within the RenewDeadline on the monotonic
clock) and raises NotLeaderError otherwise. A paused-then-resumed old leader therefore fails its
writes (the reconcile is retried, and the elector ends the process) instead of racing its successor.
Reads are never fenced: caches may warm on followers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import urllib3

from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from sriovop.runtime.leaderelection import NotLeaderError

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class FencedClient(Client):
    def __init__(self, config: RestConfig, may_write: Callable[[], bool], who: str) -> None:
        super().__init__(config)
        self._may_write = may_write
        self._who = who

    def request(self, method: str, path: str, **kw: Any) -> urllib3.BaseHTTPResponse:
        if method in _WRITES and not self._may_write():
            raise NotLeaderError(f"{self._who}: refusing {method} {path}: this replica does not hold a "
                                 "fresh leader lease")
        return super().request(method, path, **kw)
