"""Label and field selectors evaluated against cached objects (the server's syntax, client side)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Requirement = Callable[[Mapping[str, str]], bool]

_SET_RE = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_top(selector: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(selector: str | Mapping[str, str] | None) -> Callable[[Mapping[str, str]], bool]:
    """Equality (=, ==, !=), existence (key, !key) and set (in, notin) requirements, ANDed."""
    if selector is None or selector == "":
        return lambda labels: True
    if isinstance(selector, Mapping):
        wanted = dict(selector)
        return lambda labels: all(labels.get(k) == v for k, v in wanted.items())
    reqs: list[Requirement] = []
    for part in _split_top(selector):
        m = _SET_RE.match(part)
        if m:
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                reqs.append(lambda lb, k=key, vs=values: lb.get(k) in vs)  # type: ignore[misc]
            else:
                reqs.append(lambda lb, k=key, vs=values: lb.get(k) not in vs)  # type: ignore[misc]
        elif "!=" in part:
            k, v = (s.strip() for s in part.split("!=", 1))
            reqs.append(lambda lb, k=k, v=v: lb.get(k) != v)  # type: ignore[misc]
        elif "=" in part:
            k, v = (s.strip() for s in part.replace("==", "=").split("=", 1))
            reqs.append(lambda lb, k=k, v=v: lb.get(k) == v)  # type: ignore[misc]
        elif part.startswith("!"):
            k = part[1:].strip()
            reqs.append(lambda lb, k=k: k not in lb)  # type: ignore[misc]
        else:
            if not re.fullmatch(r"[A-Za-z0-9._/-]+", part):
                raise ValueError(f"label selector {selector!r}: cannot parse requirement {part!r}")
            reqs.append(lambda lb, k=part: k in lb)  # type: ignore[misc]
    return lambda labels: all(r(labels) for r in reqs)


def parse_field_selector(selector: str | Mapping[str, str] | None) -> list[tuple[str, str, bool]]:
    """→ [(field, value, equal)], equal=False for `!=`. Only exact requirements exist for fields."""
    if selector is None or selector == "":
        return []
    if isinstance(selector, Mapping):
        return [(k, str(v), True) for k, v in selector.items()]
    out = []
    for part in _split_top(selector):
        if "!=" in part:
            k, v = part.split("!=", 1)
            out.append((k.strip(), v.strip(), False))
        elif "=" in part:
            k, v = part.replace("==", "=").split("=", 1)
            out.append((k.strip(), v.strip(), True))
        else:
            raise ValueError(f"field selector {selector!r}: {part!r} is not field=value or field!=value")
    return out


def field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)
