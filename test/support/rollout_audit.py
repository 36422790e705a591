"""Requests by client, verb and resource, from the API server's audit log (JSON lines).

The scenario runs kube-apiserver with a Metadata-level policy that records each request once, at
ResponseComplete. A window is the byte range of the log written between two `mark()` calls, so
counting a window costs only its own lines; a mark also holds the file's inode, so a log rotated inside
a window (a new file, whatever its size) is an error rather than a window of the wrong lines. Clients
are told apart by User-Agent: the hollow daemons', the benchmark's own, and the rest (the operator
uses sriovop's default).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sriovop.hollow.worker import DAEMON_USER_AGENT


def who(user_agent: str, bench_agent: str) -> str:
    if user_agent.startswith(DAEMON_USER_AGENT):
        return "daemons"
    if user_agent.startswith(bench_agent):
        return "bench"
    if user_agent.startswith("sriovop"):
        return "operator"
    return "other"


@dataclass(frozen=True)
class Mark:
    """Where the log was at one moment: which file (its inode; 0 before it exists) and its size."""

    inode: int
    size: int


class AuditLog:
    def __init__(self, path: Path, bench_agent: str) -> None:
        self.path = path
        self.bench_agent = bench_agent

    def mark(self) -> Mark:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return Mark(0, 0)
        return Mark(st.st_ino, st.st_size)

    def count(self, start: Mark, end: Mark) -> Counter[tuple[str, str, str]]:
        """(client, verb, resource[/subresource]) -> requests, for the log lines between two marks of
        the same file."""
        if start.inode not in (0, end.inode) or end.size < start.size:
            raise RuntimeError(f"{self.path} was replaced inside a window (inode {start.inode}, {start.size} bytes "
                               f"-> inode {end.inode}, {end.size} bytes): the log was rotated, and the window's "
                               "requests cannot be counted")
        counts: Counter[tuple[str, str, str]] = Counter()
        with open(self.path, "rb") as f:
            f.seek(start.size)
            data = f.read(end.size - start.size)
        for line in data.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut at the window's edge
            ref = event.get("objectRef") or {}
            resource = str(ref.get("resource") or event.get("requestURI", "?").split("?")[0])
            if ref.get("subresource"):
                resource += "/" + str(ref["subresource"])
            counts[(who(str(event.get("userAgent", "")), self.bench_agent), str(event.get("verb")), resource)] += 1
        return counts


def per_client(counts: Counter[tuple[str, str, str]], client: str, divisor: float = 1.0) -> dict[str, float]:
    """{"verb resource": requests / divisor} of one client, largest first."""
    out = {f"{verb} {res}": n / divisor for (c, verb, res), n in counts.items() if c == client}
    return {k: round(v, 3) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}
