"""What the kubelet does for a Secret volume, on the host: the Secret's keys as files, swapped atomically.

The kubelet's AtomicWriter writes each new version into a fresh timestamped directory, points the
`..data` symlink at it with one rename, and the visible files (`tls.crt` → `..data/tls.crt`) never
change; a reader following the names sees either the whole old version or the whole new one. This
projector does the same from a Secret it polls, so a webhook process can serve "the mounted Secret".
"""

from __future__ import annotations

import base64
import os
import threading
import time
from pathlib import Path
from typing import Any

from sriovop.runtime.errors import ApiError
from sriovop.runtime.kinds import SECRET


class SecretVolume:
    def __init__(self, client: Any, namespace: str, name: str, directory: Path, interval: float = 0.2) -> None:
        self.client, self.namespace, self.name = client, namespace, name
        self.dir = directory
        self.interval = interval
        self.versions = 0
        self._rv = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"secret-volume-{name}", daemon=True)

    def path(self, key: str) -> Path:
        return self.dir / key

    def start(self) -> SecretVolume:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                secret = self.client.get(SECRET, self.name, self.namespace)
            except ApiError:
                secret = None
            if secret is not None and secret["metadata"]["resourceVersion"] != self._rv:
                self._write({k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()})
                self._rv = secret["metadata"]["resourceVersion"]
            self._stop.wait(self.interval)

    def _write(self, files: dict[str, bytes]) -> None:
        self.versions += 1
        version = self.dir / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{self.versions}"
        version.mkdir()
        for key, data in files.items():
            (version / key).write_bytes(data)
        tmp = self.dir / "..data_tmp"
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(version.name)
        old = os.readlink(self.dir / "..data") if (self.dir / "..data").is_symlink() else None
        os.rename(tmp, self.dir / "..data")
        for key in files:
            link = self.dir / key
            if not link.is_symlink():
                link.symlink_to(f"..data/{key}")
        if old:
            for f in (self.dir / old).iterdir():
                f.unlink()
            (self.dir / old).rmdir()
