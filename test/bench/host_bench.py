"""Benchmark: discovery and apply on a simulated host with 8 PFs x 64 VFs (prints JSON).

    .venv/bin/python test/bench/host_bench.py [--runs 7]

Baselines are measured in the same run on the same tree:
- discovery baseline: the bare syscalls discovery cannot avoid (list devices, read class/vendor/device,
  read each VF's links and netdev attributes) without building any status;
- apply baseline: the kernel work alone (sriov_numvfs 0 → 64 on each PF through the same write seam).
Target: discovery of 512 VFs <= 200 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sriovop.host import Applier, ApplyOptions, Host
from sriovop.logsetup import configure_logging
from sriovop.sim.host import SimHost

PFS_CARDS = ["xxv710"] * 4  # 4 dual-port cards = 8 PFs, 64 VFs each
VFS = 64
TARGET_DISCOVERY_MS = 200.0


def raw_scan(host: Host) -> int:
    """The unavoidable reads (same syscalls as discovery, no status building), as a floor."""
    n = 0
    devs = str(host.paths.pci_devices)

    def read(path: str) -> bytes:
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, 4096)
        finally:
            os.close(fd)

    for addr in os.listdir(devs):
        d = f"{devs}/{addr}"
        if os.path.islink(f"{d}/physfn"):
            continue
        for attr in ("class", "vendor", "device"):
            read(f"{d}/{attr}")
        for entry in os.listdir(d):
            if entry.startswith("virtfn"):
                vf = f"{devs}/{os.path.basename(os.readlink(f'{d}/{entry}'))}"
                os.readlink(f"{vf}/driver")
                read(f"{vf}/vendor")
                read(f"{vf}/device")
                for name in os.listdir(f"{vf}/net"):
                    read(f"{vf}/net/{name}/address")
                    read(f"{vf}/net/{name}/mtu")
                n += 1
    return n


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    configure_logging("warning", "console")
    # tmpfs, like the real sysfs (in memory); falls back to the default temp dir.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = Path(tempfile.mkdtemp(prefix="sriovop-host-bench-", dir=shm))
    try:
        with SimHost(tmp / "host", PFS_CARDS) as sim:
            host = Host(sim.root, kernel=sim.access)
            status = host.init()
            pfs = [i for i in status if "totalvfs" in i]
            assert len(pfs) == 8
            spec = [{"pciAddress": p["pciAddress"], "name": p["name"], "numVfs": VFS, "mtu": 9000,
                     "vfGroups": [{"resourceName": "net", "deviceType": "netdevice", "vfRange": f"0-{VFS - 1}",
                                   "mtu": 9000}]} for p in pfs]
            options = ApplyOptions(vf_poll_interval=0.005)

            # apply baseline: only the kernel work (numvfs writes) through the same seam.
            t0 = time.perf_counter()
            for p in pfs:
                host.io.write(host.paths.device(p["pciAddress"]) / "sriov_numvfs", str(VFS))
            kernel_ms = (time.perf_counter() - t0) * 1000
            for p in pfs:
                host.io.write(host.paths.device(p["pciAddress"]) / "sriov_numvfs", "0")

            t0 = time.perf_counter()
            Applier(host, options=options).apply(spec, host.discover())
            apply_ms = (time.perf_counter() - t0) * 1000

            final = host.discover()
            vf_count = sum(len(i.get("Vfs", [])) for i in final)
            assert vf_count == 8 * VFS, vf_count
            assert all(v.get("mtu") == 9000 and v.get("driver") == "iavf" for i in final for v in i["Vfs"])

            # Interleaved so background load hits both series alike.
            discovery, floor = [], []
            for _ in range(args.runs):
                discovery += timed(host.discover, 1)
                floor += timed(lambda: raw_scan(host), 1)
            t0 = time.perf_counter()
            Applier(host, options=options).apply(spec, host.discover())
            noop_apply_ms = (time.perf_counter() - t0) * 1000
            host.close()
        disc_median = statistics.median(discovery)
        floor_median = statistics.median(floor)
        print(json.dumps({
            "host": {"pfs": 8, "vfs_per_pf": VFS, "vfs": vf_count},
            "discovery_ms": {"median": round(disc_median, 2), "min": round(min(discovery), 2),
                             "max": round(max(discovery), 2), "runs": args.runs},
            "discovery_baseline_raw_sysfs_ms": round(floor_median, 2),
            "discovery_per_vf_us": round(disc_median * 1000 / vf_count, 1),
            "discovery_overhead_per_vf_us": round((disc_median - floor_median) * 1000 / vf_count, 1),
            "discovery_target_ms": TARGET_DISCOVERY_MS,
            "discovery_within_target": disc_median <= TARGET_DISCOVERY_MS,
            "apply_0_to_64_on_8_pfs_ms": round(apply_ms, 1),
            "apply_baseline_kernel_only_ms": round(kernel_ms, 1),
            "apply_per_vf_ms": round(apply_ms / vf_count, 3),
            "apply_overhead_per_vf_ms": round((apply_ms - kernel_ms) / vf_count, 3),
            "apply_noop_ms": round(noop_apply_ms, 1),
        }, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
