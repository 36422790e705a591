"""How a process finds the simulator serving a host root: `<root>/.sriovop-sim/endpoint.json`.

The simulator writes the file once its socket listens and removes it when it stops; a reboot writes a
new one (new socket, new network namespace). Anything that drives a simulated root from another
process (a config daemon under test, a CNI server, an exporter, the hollow fleet's clean-up) reads it
here, so the marker's name and format live in one place, inside the simulator's room.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

#: Directory (under the root) holding the simulator's endpoint description, if the root is simulated.
SIM_DIR = ".sriovop-sim"
SIM_ENDPOINT_FILE = "endpoint.json"


def endpoint_path(root: str | Path) -> Path:
    return Path(root) / SIM_DIR / SIM_ENDPOINT_FILE


def is_simulated_tree(root: str | Path) -> bool:
    """The root was built by a simulator (running or not)."""
    return (Path(root) / SIM_DIR).is_dir()


def write_endpoint(root: Path, socket: str, netns: str) -> None:
    """Atomically: a reader never sees half a file."""
    path = endpoint_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(SIM_ENDPOINT_FILE + ".tmp")
    tmp.write_text(json.dumps({"socket": socket, "netns": netns, "root": str(Path(root).resolve())}))
    os.replace(tmp, path)


def remove_endpoint(root: Path) -> None:
    endpoint_path(root).unlink(missing_ok=True)


def read_endpoint(root: str | Path) -> dict[str, str] | None:
    """The running simulator's {socket, netns, root}, else None; `netns` as this process can open it."""
    try:
        data = json.loads(endpoint_path(root).read_text())
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not isinstance(data, dict):
        return None
    info = {str(k): str(v) for k, v in data.items()}
    if info.get("netns") and info.get("root"):
        info["netns"] = netns_seen_from(Path(root), info["netns"], info["root"])
    return info


def netns_seen_from(here_root: Path, name: str, sim_root: str) -> str:
    """The simulator's namespace as this process can open it.

    A simulator names its namespace under the machine's /var/run/netns. A daemon in a pod sees the
    machine under its host mount (the simulated root `/host/var/lib/x` is the machine's `/var/lib/x`),
    so there the namespace is the file `/host/var/run/netns/NAME`; on the machine itself the name is
    enough.
    """
    here = str(here_root.resolve())
    if here == sim_root or not here.endswith(sim_root):
        return name
    machine = Path(here[: len(here) - len(sim_root)] or "/")
    # /var/run is usually an absolute link to /run, which inside the pod would point at the pod's own.
    candidates = [machine / "var/run/netns" / name, machine / "run/netns" / name]
    return str(next((c for c in candidates if c.exists()), candidates[0]))
