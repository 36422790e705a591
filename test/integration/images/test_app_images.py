"""The operator, webhook and config-daemon images (`make images`): import, entrypoints, node tools.

Host: this machine, through a private containerd and runc (own root, state and socket under a temp
dir). The build is the cached `make images` one (build/images); a cold build takes minutes.
`ctr run IMAGE ID ARGS` replaces the image's whole command line (Entrypoint and Cmd) with ARGS.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.devcluster.images.build import build_images
from sriovop.devcluster.images.spec import IMAGES, ImageSpec, by_target
from test.support.containerd import Containerd, private_containerd
from test.support.oci_layout import read_archive

REPO = Path(__file__).resolve().parents[3]
# Each node tool and the flag that prints its version (and so proves the binary and its libraries load).
NODE_TOOLS = {
    "ip": (["ip", "-V"], r"ip utility, iproute2"),
    "modprobe": (["modprobe", "--version"], r"kmod version \d+"),
    "ethtool": (["ethtool", "--version"], r"ethtool version \d+"),
    "lspci": (["lspci", "--version"], r"lspci version \d+"),
    "mstconfig": (["mstconfig", "-v"], r"mstconfig.*\d+\.\d+"),
}


@pytest.fixture(scope="module")
def archives() -> dict[str, Path]:
    return build_images()


@pytest.fixture(scope="module")
def ctrd(archives: dict[str, Path]) -> Iterator[Containerd]:
    with private_containerd() as daemon:
        for target in (s.target for s in IMAGES):
            daemon.ctr("images", "import", str(archives[target]), timeout=600)
        yield daemon


def test_archives_carry_the_spec_names_and_config(archives: dict[str, Path]) -> None:
    for spec in IMAGES:
        image = read_archive(archives[spec.target])
        assert image.name == spec.name
        config = image.config["config"]
        assert config["Entrypoint"] == list(spec.entrypoint)
        assert config.get("Cmd", []) == list(spec.cmd)
        assert config["User"] == spec.user
    assert read_archive(archives["pause"]).name == "registry.k8s.io/pause:3.10"


def test_a_warm_build_rewrites_nothing(archives: dict[str, Path]) -> None:
    before = {t: p.stat().st_mtime_ns for t, p in archives.items()}
    lines: list[str] = []
    again = build_images(say=lines.append)
    assert again == archives
    assert {t: p.stat().st_mtime_ns for t, p in again.items()} == before
    assert lines == [], lines


def _entrypoint(archives: dict[str, Path], spec: ImageSpec) -> list[str]:
    """The Entrypoint as the archive's config states it (what a kubelet runs when a pod sets only args)."""
    entrypoint = read_archive(archives[spec.target]).config["config"]["Entrypoint"]
    assert isinstance(entrypoint, list)
    return entrypoint


@pytest.mark.parametrize("spec", IMAGES, ids=lambda s: s.target)
def test_entrypoint_prints_the_sriovop_help(ctrd: Containerd, archives: dict[str, Path], spec: ImageSpec) -> None:
    assert spec.name in ctrd.image_names()
    # `ctr run IMAGE ID ARGS` replaces the whole command line, so pass the image's Entrypoint + --help.
    argv = [*_entrypoint(archives, spec), "--help"]
    done = ctrd.run(spec.name, f"help-{spec.target}-{uuid.uuid4().hex[:6]}", *argv)
    assert done.returncode == 0, done.stderr
    usage = "Usage: sriovop" + "".join(f" {word}" for word in spec.entrypoint[1:])
    assert usage in done.stdout, done.stdout
    if spec.target == "operator":
        assert "config-daemon" in done.stdout and "webhook" in done.stdout


def test_operator_image_runs_sriovop_as_its_nonroot_user(ctrd: Containerd, archives: dict[str, Path]) -> None:
    spec = by_target("operator")
    code = "import os, sriovop; print(os.getuid(), os.getgid(), sriovop.__file__)"
    done = ctrd.run(spec.name, f"whoami-{uuid.uuid4().hex[:6]}", "python3", "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["65532", "65532", "/usr/local/lib/python3.11/dist-packages/sriovop/__init__.py"]
    version = ctrd.run(spec.name, f"version-{uuid.uuid4().hex[:6]}", *_entrypoint(archives, spec), "--version")
    assert version.returncode == 0 and version.stdout.startswith("sriovop, version"), version


def test_image_holds_every_module_of_the_source_tree(ctrd: Containerd) -> None:
    """The wheel packages every module (a directory without __init__.py is silently left out of it)."""
    code = ("import pathlib, sriovop; root = pathlib.Path(sriovop.__file__).parent; "
            "print('\\n'.join(sorted(str(p.relative_to(root)) for p in root.rglob('*.py'))))")
    done = ctrd.run(by_target("webhook").name, f"modules-{uuid.uuid4().hex[:6]}", "python3", "-c", code)
    assert done.returncode == 0, done.stderr
    source = sorted(str(p.relative_to(REPO / "sriovop")) for p in (REPO / "sriovop").rglob("*.py"))
    assert done.stdout.split() == source


@pytest.mark.parametrize("tool", sorted(NODE_TOOLS))
def test_config_daemon_image_has_the_node_tools(ctrd: Containerd, tool: str) -> None:
    argv, pattern = NODE_TOOLS[tool]
    # Found through the image's PATH, run as the image's user (root), with the image's libraries.
    done = ctrd.run(by_target("config-daemon").name, f"{tool}-{uuid.uuid4().hex[:6]}", *argv)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert re.search(pattern, done.stdout + done.stderr), (done.stdout, done.stderr)


def test_device_plugin_image_loads_grpc_and_names_a_missing_config(ctrd: Containerd) -> None:
    """`sriovop device-plugin` in its image imports grpcio and the generated stubs (native code from the
    pinned wheels), discovers this machine's sysfs, and ends naming the config file it cannot read."""
    code = "import grpc, google.protobuf; from sriovop.deviceplugin import manager; print(grpc.__version__)"
    done = ctrd.run(by_target("device-plugin").name, f"grpc-{uuid.uuid4().hex[:6]}", "python3", "-c", code)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    done = ctrd.run(by_target("device-plugin").name, f"dp-{uuid.uuid4().hex[:6]}", "sriovop", "device-plugin",
                    "--config-file=/etc/pcidp/absent", "--device-plugin-dir=/tmp/dp", "--devinfo-dir=/tmp/devinfo")
    assert done.returncode == 1 and "cannot read /etc/pcidp/absent" in done.stderr, (done.stdout, done.stderr)
