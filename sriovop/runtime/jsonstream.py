"""Decode a LIST response one item at a time.

`json.loads` of a 10,000-object LIST materialises every object before the first can be frozen and
stored, so the process peaks at body + all decoded objects + the cache, and CPython keeps most of
that peak as RSS. Decoding item by item with the stdlib's C scanner and handing each item to
`transform` at once keeps the peak at one item plus the cache.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_WS = re.compile(r"[ \t\n\r]*")
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _ws(s: str, idx: int) -> int:
    m = _WS.match(s, idx)
    return m.end() if m else idx


def _expect(s: str, idx: int, ch: str) -> None:
    if idx >= len(s) or s[idx] != ch:
        raise ValueError(f"malformed list response: expected {ch!r} at offset {idx}")


def _value(s: str, idx: int) -> tuple[Any, int]:
    try:
        return _scan(s, idx)
    except StopIteration as exc:
        raise ValueError(f"malformed list response: no JSON value at offset {idx}") from exc


def decode_list(data: bytes | str, transform: Callable[[dict[str, Any]], Any]) -> tuple[dict[str, Any], list[Any]]:
    """→ (the top-level fields except items, [transform(item) for each item]), streaming the items."""
    s = data.decode("utf-8") if isinstance(data, bytes) else data
    top: dict[str, Any] = {}
    items: list[Any] = []
    idx = _ws(s, 0)
    _expect(s, idx, "{")
    idx = _ws(s, idx + 1)
    if s.startswith("}", idx):
        return top, items
    while True:
        _expect(s, idx, '"')
        key, idx = scanstring(s, idx + 1)
        idx = _ws(s, idx)
        _expect(s, idx, ":")
        idx = _ws(s, idx + 1)
        if key == "items" and s.startswith("[", idx):
            idx = _ws(s, idx + 1)
            if not s.startswith("]", idx):
                while True:
                    obj, idx = _value(s, idx)
                    items.append(transform(obj))
                    idx = _ws(s, idx)
                    if s.startswith(",", idx):
                        idx = _ws(s, idx + 1)
                        continue
                    _expect(s, idx, "]")
                    break
            idx += 1
        else:
            top[key], idx = _value(s, idx)
        idx = _ws(s, idx)
        if s.startswith(",", idx):
            idx = _ws(s, idx + 1)
            continue
        _expect(s, idx, "}")
        return top, items
