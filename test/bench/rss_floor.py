"""The memory floor of a Python object cache: a bare interpreter holding the same objects as dicts.

Why: the operator's caches keep each object as the dict its JSON decodes to (one decode per listed
item or watch event), which is what every controller reads. How much RSS that takes for a given JSON
size is a property of CPython (a small dict, a str per key and value), not of our code. This process
imports nothing but `json`, reads JSON lines (one trimmed object each, exactly what the operator
caches), decodes each line on its own and keeps every object, and prints its RSS before and after as
JSON: the operator's RSS minus its RSS after imports, compared with this growth, says how much of the
operator's memory is the interpreter's price for the objects and how much is ours.

    python test/bench/rss_floor.py OBJECTS.jsonl
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    gc.collect()
    before = rss_kib()
    held: dict[str, object] = {}
    json_bytes = 0
    with open(sys.argv[1], "rb") as lines:
        for i, line in enumerate(lines):
            json_bytes += len(line) - 1
            held[str(i)] = json.loads(line)
    gc.collect()
    print(json.dumps({"objects": len(held), "json_mib": round(json_bytes / 2**20, 2),
                      "rss_before_mib": round(before / 1024, 1), "rss_holding_mib": round(rss_kib() / 1024, 1)}))


if __name__ == "__main__":
    main()
