"""Timings of the e2e QEMU guest, printed as JSON (a script, not a test).

    .venv/bin/python test/bench/vm_timings.py [--boots 3] [--skip-cold]

- setup_cold_seconds: hack/vm/setup.sh into an empty cache (kernel download + depmod + initramfs; QEMU
  itself is only installed cold on a machine that lacks it, see install-qemu.sh's own progress lines)
- setup_warm_seconds: the same again with everything cached
- kvm_probe_seconds: the accelerator probe into an empty cache (paid once per host boot)
- boot_seconds: host wall time from QEMU start to the guest ready to run the command (median, list)
- run_true_total_seconds: a full boot → `true` → poweroff cycle (median)
- vf_create_{4,7}_seconds / vf_reset_seconds: inside the guest, sysfs write until every VF is bound to
  igbvf with a netdev (median over boots)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from test.support.vm_guest import HACK_VM, GuestVM, ensure_setup

GUEST_SNIPPET = r"""
import json, os, time
from pathlib import Path
pf = Path("/sys/class/net/eth0/device")
def vfs_ready(n):
    links = list(pf.glob("virtfn*"))
    return len(links) == n and all((l / "driver").exists() and (l / "net").is_dir() for l in links)
def numvfs(n):
    t0 = time.monotonic()
    (pf / "sriov_numvfs").write_text(str(n))
    while not vfs_ready(n):
        time.sleep(0.02)
    return time.monotonic() - t0
r = {"vf_create_4_seconds": numvfs(4), "vf_reset_seconds": numvfs(0), "vf_create_7_seconds": numvfs(7)}
numvfs(0)
print("BENCH " + json.dumps(r), flush=True)
"""


def timed_setup(cache: Path | None) -> float:
    env = dict(os.environ)
    if cache is not None:
        env["SRIOVOP_VM_CACHE"] = str(cache)
    t0 = time.monotonic()
    subprocess.run([str(HACK_VM / "setup.sh")], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boots", type=int, default=3)
    ap.add_argument("--skip-cold", action="store_true")
    args = ap.parse_args()
    t_all = time.monotonic()
    out: dict[str, object] = {}
    if not args.skip_cold:
        with tempfile.TemporaryDirectory(prefix="sriovop-vm-cold-") as tmp:
            out["setup_cold_seconds"] = timed_setup(Path(tmp))
            kdir = Path(tmp) / "kernel" / "current"
            kver = (kdir / "kver").read_text().strip()
            initrd = next((Path(tmp) / "initramfs").glob("*.cpio.gz"))
            t0 = time.monotonic()
            accel = subprocess.run(
                [str(HACK_VM / "probe-kvm.sh"), "auto", str(kdir / "boot" / f"vmlinuz-{kver}"), str(initrd)],
                env=dict(os.environ, SRIOVOP_VM_CACHE=tmp), check=True, capture_output=True, text=True)
            out["kvm_probe_seconds"] = time.monotonic() - t0
            out["kvm_probe_verdict"] = accel.stdout.strip()
    ensure_setup()
    out["setup_warm_seconds"] = timed_setup(None)

    boots: list[float] = []
    totals: list[float] = []
    guest_runs: list[dict[str, float]] = []
    for _ in range(args.boots):
        g = GuestVM(igb=1, files={"bench.py": GUEST_SNIPPET}).start("exec python3 /run/job/bench.py", timeout=300)
        rc, console = g.wait(330)
        if rc != 0 or g.boot_seconds is None or g.exited_at is None:
            print(console[-3000:], file=sys.stderr)
            return 1
        boots.append(g.boot_seconds)
        totals.append(g.exited_at - g.started)
        line = next(ln for ln in g.output.splitlines() if ln.startswith("BENCH "))
        guest_runs.append(json.loads(line.split(" ", 1)[1]))
    out["boot_seconds"] = statistics.median(boots)
    out["boot_seconds_all"] = boots
    out["run_with_vfs_total_seconds"] = statistics.median(totals)
    for key in guest_runs[0]:
        out[key] = statistics.median(r[key] for r in guest_runs)
    out["bench_total_seconds"] = time.monotonic() - t_all
    out["load_average_1m_at_end"] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
