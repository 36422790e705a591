"""Go's `encoding/json.Indent`, because the NAD's `spec.config` must be byte-identical to upstream's.

Re-serialising with Python's `json.dumps` would reorder nothing but would still change tokens (number
spelling, string escapes, non-ASCII), so this walks the tokens instead: strings and numbers are copied
verbatim, whitespace between tokens is dropped, newlines and indentation are inserted exactly where Go
inserts them (`{}` and `[]` stay compact, `"key": value` has one space).
"""

from __future__ import annotations

import json

_WS = " \t\r\n"


def go_indent(src: str, prefix: str = "", indent: str = "    ") -> str:
    """Indent valid JSON text like Go's json.Indent; invalid JSON raises ValueError naming the problem."""
    try:
        json.loads(src)
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    out: list[str] = []
    depth = 0
    need_indent = False  # an opening bracket was written; the newline waits for the first element
    i, n = 0, len(src)
    while i < n and src[i] in _WS:
        i += 1
    while i < n:
        c = src[i]
        if c in _WS:
            i += 1
            continue
        if need_indent and c not in "]}":
            need_indent = False
            depth += 1
            out.append("\n" + prefix + indent * depth)
        if c == '"':
            j = i + 1
            while True:
                ch = src[j]
                if ch == "\\":
                    j += 2
                    continue
                if ch == '"':
                    break
                j += 1
            out.append(src[i : j + 1])
            i = j + 1
            continue
        if c in "{[":
            out.append(c)
            need_indent = True
        elif c == ",":
            out.append(",\n" + prefix + indent * depth)
        elif c == ":":
            out.append(": ")
        elif c in "}]":
            if need_indent:
                need_indent = False  # empty object/array: stays compact
            else:
                depth -= 1
                out.append("\n" + prefix + indent * depth)
            out.append(c)
        else:
            out.append(c)
        i += 1
    return "".join(out)
