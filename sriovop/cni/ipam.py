"""Delegating to the IPAM plugin named in `ipam.type` (host-local, static, ...), as libcni would.

The plugin binary is looked up in the runtime's CNI_PATH (optionally under a prefix: inside the
DaemonSet the host's /opt/cni/bin is mounted elsewhere) and run with the same stdin and CNI_*
environment; its result (or its CNI error) is what the caller gets.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from sriovop.cni.errors import IO_FAILURE, CniError

TIMEOUT = 120.0


def find_plugin(name: str, cni_path: str, prefix: str = "") -> Path:
    dirs = [d for d in cni_path.split(":") if d]
    for d in dirs:
        candidate = Path(prefix + d) / name if prefix else Path(d) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise CniError(IO_FAILURE, "IPAM plugin not found",
                   f"ipam.type: {name!r} is not in CNI_PATH {cni_path!r}" + (f" (under {prefix})" if prefix else ""))


def run(command: str, name: str, stdin: bytes, env: dict[str, str], prefix: str = "") -> dict[str, Any] | None:
    """Run IPAM `command` (ADD/DEL/CHECK); the parsed result for ADD, None otherwise."""
    plugin = find_plugin(name, env.get("CNI_PATH", ""), prefix)
    child_env = {k: v for k, v in env.items() if k.startswith("CNI_")}
    child_env["CNI_COMMAND"] = command
    child_env["PATH"] = os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    try:
        done = subprocess.run([str(plugin)], input=stdin, env=child_env, capture_output=True, timeout=TIMEOUT,
                              check=False)
    except subprocess.TimeoutExpired:
        raise CniError(IO_FAILURE, f"IPAM {name} {command} timed out", f"ipam.type {name}: {TIMEOUT:g}s") from None
    if done.returncode != 0:
        try:
            err = json.loads(done.stdout)
            raise CniError(int(err.get("code", IO_FAILURE)), f"IPAM {name} {command}: {err.get('msg', '')}",
                           str(err.get("details", "")))
        except (ValueError, AttributeError):
            raise CniError(IO_FAILURE, f"IPAM {name} {command} failed",
                           (done.stderr or done.stdout).decode(errors="replace").strip()[:500]) from None
    if command != "ADD":
        return None
    try:
        result = json.loads(done.stdout)
    except ValueError:
        raise CniError(IO_FAILURE, f"IPAM {name} returned no result", done.stdout.decode(errors="replace")[:200]) \
            from None
    return dict(result)
