"""hack/vm/build-initramfs.sh on a synthetic kernel tree: load order from modules.dep, compressed modules.

The real kernels cover one layout each (bookworm 6.1: plain .ko and a modular virtio_pci; bpo 6.12:
.ko.xz and a builtin virtio_pci); this pins both behaviours, plus .ko.zst, without a download or a boot.
"""

from __future__ import annotations

import gzip
import lzma
import os
import subprocess
from pathlib import Path

import pytest

from test.support.vm_guest import HACK_VM

pytestmark = pytest.mark.e2e

KVER = "9.9.9-sriovop-test"
DEP = {
    "kernel/v/virtio_net.ko": ["kernel/v/net_failover.ko", "kernel/v/failover.ko"],
    "kernel/v/net_failover.ko": ["kernel/v/failover.ko"],
    "kernel/v/failover.ko": [],
    "kernel/n/9pnet_virtio.ko.xz": ["kernel/n/9pnet.ko.xz"],
    "kernel/n/9pnet.ko.xz": [],
    "kernel/f/9p.ko.xz": ["kernel/n/9pnet.ko.xz", "kernel/f/netfs.ko.xz"],
    "kernel/f/netfs.ko.xz": [],
    "kernel/o/overlay.ko": [],
    "kernel/i/igb.ko.xz": ["kernel/d/dca.ko.xz", "kernel/a/i2c-algo-bit.ko.xz"],
    "kernel/d/dca.ko.xz": [],
    "kernel/a/i2c-algo-bit.ko.xz": [],
    "kernel/i/igbvf.ko.zst": [],
}


def payload(rel: str) -> bytes:
    return f"module {rel}\n".encode()


def fake_kernel(root: Path, dep: dict[str, list[str]]) -> Path:
    kdir = root / "kernel"
    mods = kdir / "lib" / "modules" / KVER
    mods.mkdir(parents=True)
    (kdir / "kver").write_text(KVER + "\n")
    (mods / "modules.dep").write_text("".join(f"{m}: {' '.join(d)}\n" for m, d in dep.items()))
    (mods / "modules.builtin").write_text("kernel/drivers/virtio/virtio_pci.ko\n")
    for rel in dep:
        path = mods / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".xz"):
            path.write_bytes(lzma.compress(payload(rel)))
        elif rel.endswith(".zst"):
            subprocess.run(["zstd", "-q", "-o", str(path)], input=payload(rel), check=True)
        else:
            path.write_bytes(payload(rel))
    return kdir


def build(kdir: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SRIOVOP_VM_CACHE=str(cache))
    return subprocess.run([str(HACK_VM / "build-initramfs.sh"), str(kdir)], env=env, capture_output=True,
                          text=True, check=False)


def unpack(archive: Path, dest: Path) -> None:
    dest.mkdir()
    subprocess.run(["cpio", "-idm", "--quiet"], input=gzip.decompress(archive.read_bytes()), cwd=dest,
                   check=True)


def test_modules_in_dependency_order_and_decompressed(vm_ready: None, tmp_path: Path) -> None:
    kdir = fake_kernel(tmp_path, DEP)
    proc = build(kdir, tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    archive = Path(proc.stdout.strip())
    assert archive.parent == tmp_path / "cache" / "initramfs"
    root = tmp_path / "root"
    unpack(archive, root)

    assert os.access(root / "init", os.X_OK)
    assert (root / "init").read_text() == (HACK_VM / "init.sh").read_text()
    assert (root / "bin" / "busybox").stat().st_size > 100_000
    lib = root / "lib" / "modules"
    # virtio_pci is builtin (nothing to load); shared 9pnet is loaded once, before its users.
    assert (lib / "base.list").read_text().split() == [
        "failover.ko", "net_failover.ko", "virtio_net.ko", "9pnet.ko", "9pnet_virtio.ko", "netfs.ko", "9p.ko",
        "overlay.ko"]
    assert (lib / "nic.list").read_text().split() == ["i2c-algo-bit.ko", "dca.ko", "igb.ko", "igbvf.ko"]
    for rel in DEP:
        name = Path(rel).name.removesuffix(".xz").removesuffix(".zst")
        assert (lib / name).read_bytes() == payload(rel), name

    again = build(kdir, tmp_path / "cache")
    assert again.returncode == 0 and Path(again.stdout.strip()) == archive
    assert "cached" in again.stderr


def test_missing_module_is_named(vm_ready: None, tmp_path: Path) -> None:
    dep = {k: v for k, v in DEP.items() if "overlay" not in k}
    proc = build(fake_kernel(tmp_path, dep), tmp_path / "cache")
    assert proc.returncode != 0
    assert "module overlay: neither in modules.dep nor builtin" in proc.stderr
