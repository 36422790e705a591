"""What ADD ran, per container ID, so that DEL can undo it without the API server (the pod or its
NetworkAttachmentDefinitions may be gone by then).

The file is written before the first delegate runs and again after each one, through a temporary file
and a rename, so a crash in the middle still leaves DEL a complete list of what may need undoing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sriovop.cni.attach.delegate import Delegate


@dataclass
class Entry:
    container_id: str
    netns: str
    cni_args: str
    delegates: list[Delegate] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"containerID": self.container_id, "netns": self.netns, "cniArgs": self.cni_args,
                "delegates": [d.to_json() for d in self.delegates]}


def path(cache_dir: Path, container_id: str) -> Path:
    if not container_id or "/" in container_id or container_id in (".", ".."):
        raise ValueError(f"container ID {container_id!r} cannot name a cache file")
    return cache_dir / container_id


def save(cache_dir: Path, entry: Entry) -> None:
    target = path(cache_dir, entry.container_id)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(entry.to_json()))
    os.replace(tmp, target)


def load(cache_dir: Path, container_id: str) -> Entry | None:
    try:
        obj = json.loads(path(cache_dir, container_id).read_text())
    except FileNotFoundError:
        return None
    return Entry(obj["containerID"], obj.get("netns", ""), obj.get("cniArgs", ""),
                 [Delegate.from_json(d) for d in obj.get("delegates", [])])


def remove(cache_dir: Path, container_id: str) -> None:
    path(cache_dir, container_id).unlink(missing_ok=True)
