"""A PCI function's RDMA devices and the character devices a container needs to use them.

Read from sysfs under the host root, as the rdmamap library upstream uses does: the RDMA devices are the
entries of `<pci>/infiniband/`; `uverbsN` is the entry of `class/infiniband_verbs/` whose `ibdev` names
the device, `umadN`/`issmN` those of `class/infiniband_mad/`; `/dev/infiniband/rdma_cm` is shared.
"""

from __future__ import annotations

from sriovop.host.paths import HostPaths
from sriovop.host.sysfs import listdir, read_str

DEV_DIR = "/dev/infiniband"
RDMA_CM = f"{DEV_DIR}/rdma_cm"


def rdma_devices(paths: HostPaths, pci: str) -> tuple[str, ...]:
    """The RDMA device names (e.g. `mlx5_3`) of a PCI function; empty when it has none."""
    return tuple(listdir(paths.device(pci) / "infiniband"))


def pkeys(paths: HostPaths, pci: str) -> tuple[str, ...]:
    """The non-zero partition keys of the function's InfiniBand ports, as `0x7fff` strings."""
    out: list[str] = []
    for dev in rdma_devices(paths, pci):
        ports = paths.device(pci) / "infiniband" / dev / "ports"
        for port in listdir(ports):
            for index in listdir(ports / port / "pkeys"):
                value = read_str(ports / port / "pkeys" / index) or ""
                try:
                    number = int(value, 16)
                except ValueError:
                    continue
                if number and f"0x{number:04x}" not in out:
                    out.append(f"0x{number:04x}")
    return tuple(out)


def char_devices(paths: HostPaths, rdma_dev: str) -> list[str]:
    """`/dev/infiniband/...` paths for one RDMA device: uverbs, umad, issm, then rdma_cm."""
    out: list[str] = []
    for cls, prefixes in (("infiniband_verbs", ("uverbs",)), ("infiniband_mad", ("umad", "issm"))):
        base = paths.sys / "class" / cls
        for entry in listdir(base):
            if entry.startswith(prefixes) and read_str(base / entry / "ibdev") == rdma_dev:
                out.append(f"{DEV_DIR}/{entry}")
    if out:
        out.append(RDMA_CM)
    return out
