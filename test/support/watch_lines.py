"""Watch lines as kube-apiserver writes them, for code that reads the raw stream (the hollow hub's
name filter): compact JSON, an object's keys sorted as Go encodes an unstructured object, and the
event's own "type" first, as Go encodes the event struct."""

from __future__ import annotations

import json
from typing import Any


def watch_line(etype: str, obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return f'{{"type":"{etype}","object":{body}}}'.encode()
