"""Every write the operator's pods make, read from their container log files on the nodes.

The in-cluster counterpart of the process harness's replica logs: the kubelet keeps each container's
output under `<node>/pod-logs/<namespace>_<pod>_<uid>/<container>/<restart>.log` in the CRI format
(`<time> <stream> <P|F> <text>`). A deleted pod's directory is removed by the kubelet and a large log
is rotated by renaming, so the reader keeps every file it found open (keyed by inode) and reads it to
the end: an unlinked or renamed file is still readable through its descriptor, and no line written
before a pod went away is missed.
"""

from __future__ import annotations

import glob
import os
import threading
from pathlib import Path
from typing import IO

from test.support.failover_analysis import Write, parse_write


def cri_message(line: str) -> tuple[str, bool]:
    """The text of one CRI log line and whether it ends a record (`F`), or ("", True) for noise."""
    parts = line.rstrip("\n").split(" ", 3)
    if len(parts) < 3 or parts[2] not in ("P", "F"):
        return "", True
    return (parts[3] if len(parts) == 4 else ""), parts[2] == "F"


class PodLogWrites:
    """A thread polling `<node dir>/pod-logs/<namespace>_<prefix>*/**/*.log` of every node."""

    def __init__(self, nodes_dir: Path, namespace: str, pod_prefix: str, period: float = 0.2) -> None:
        self.pattern = f"*/pod-logs/{namespace}_{pod_prefix}*/*/*.log"
        self.nodes_dir = nodes_dir
        self.period = period
        self._files: dict[tuple[int, int], tuple[IO[bytes], list[str]]] = {}
        self._writes: list[Write] = []
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # the thread and a caller of poll() must not read the same files
        self._stop = threading.Event()
        self._error: Exception | None = None
        self.thread = threading.Thread(target=self._run, name="pod-log-writes", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self.thread.ident is not None:
            self.thread.join(30)
        self.poll()  # whatever was written since the last round
        for handle, _ in self._files.values():
            handle.close()
        self._files.clear()

    def writes(self) -> list[Write]:
        if self._error is not None:  # a reader that stopped must not look like an operator that stopped writing
            raise RuntimeError(f"the pod log reader stopped: {self._error!r}") from self._error
        with self._lock:
            return list(self._writes)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.period):
                self.poll()
        except Exception as exc:
            self._error = exc
            raise

    def poll(self) -> None:
        """Read what was added since the last call (also called by the harness to catch up at once)."""
        with self._reading:
            self._poll()

    def _poll(self) -> None:
        # glob.glob, not Path.glob: the kubelet removes a deleted pod's directory whenever it likes, and
        # Path.glob raises FileNotFoundError when a directory vanishes while it is being listed (that
        # killed this thread once, so no later write was seen); glob.glob skips such a directory.
        for name in glob.glob(str(self.nodes_dir / self.pattern)):
            path = Path(name)
            try:
                st = path.stat()
                if (st.st_dev, st.st_ino) not in self._files:
                    self._files[(st.st_dev, st.st_ino)] = (path.open("rb"), [])
            except OSError:  # removed between the glob and the open: its lines were read through an older fd
                continue
        found: list[Write] = []
        for handle, pending in self._files.values():
            for raw in iter(handle.readline, b""):
                if not raw.endswith(b"\n"):  # the writer is mid-line: read it whole next round
                    handle.seek(-len(raw), os.SEEK_CUR)
                    break
                text, final = cri_message(raw.decode(errors="replace"))
                pending.append(text)
                if final:
                    write = parse_write("".join(pending))
                    pending.clear()
                    if write is not None:
                        found.append(write)
        if found:
            with self._lock:
                self._writes.extend(found)
