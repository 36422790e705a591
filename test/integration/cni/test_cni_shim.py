"""The real static shim against a real `sriovop cni-server` process.

Host: the simulated SR-IOV host for the VF (the server runs with --simulated-host; the VF netdevs are
real links), this machine's kernel for the unix socket, SCM_RIGHTS and SO_PEERCRED. The shim is built
with the local Go toolchain (CGO_ENABLED=0).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pyroute2 import IPRoute, netns

from sriovop.devcluster.images.cni_shim import shim_binary
from sriovop.sim.host import SimHost
from sriovop.sim.vf_netdevs import wire_vf_netdevs
from test.support.cni_sim import cni_path, create_vfs


@pytest.fixture(scope="module")
def shim() -> Path:
    binary = shim_binary()
    out = subprocess.run(["file", str(binary)], capture_output=True, text=True, check=False).stdout
    assert "statically linked" in out, out
    return binary


@pytest.fixture
def served(tmp_path: Path, shim: Path) -> Iterator[dict[str, Any]]:
    sim = SimHost(tmp_path / "host", ["xxv710:1"]).start()
    proc = None
    names: list[str] = []
    # Sockets and the installed shim live where any user can traverse (pytest's own tmp is 0700), so
    # that only the server's own permissions and peer check stand between a non-root caller and it.
    public = Path(tempfile.mkdtemp(prefix="cni-shim-"))
    public.chmod(0o755)
    try:
        create_vfs(sim, 0, 4)
        vfs = wire_vf_netdevs(sim.root)
        sockets = public / "sock"
        proc = subprocess.Popen(
            [sys.executable, "-m", "sriovop.cli", "cni-server", "--socket-dir", str(sockets), "--plugins",
             "sriov,ib-sriov", "--host-root", str(sim.root), "--state-dir", str(tmp_path / "state"),
             "--simulated-host", "--log-format", "console"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while not (sockets / "ib-sriov.sock").exists():
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "cni-server did not create its sockets in 60s"
            time.sleep(0.05)
        bin_dir = public / "bin"
        bin_dir.mkdir(mode=0o755)
        shutil.copy(shim, bin_dir / "sriov")
        yield {"sim": sim, "vfs": vfs, "sockets": sockets, "bin": bin_dir, "proc": proc, "names": names,
               "tmp": tmp_path}
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        for name in names:
            try:
                netns.remove(name)
            except OSError:
                pass
        sim.stop()
        shutil.rmtree(public, ignore_errors=True)


def run_shim(env: dict[str, Any], command: str, conf: dict[str, Any] | None, netns_path: str, *, cid: str = "c1",
             ifname: str = "net1", prefix: list[str] | None = None, socket_dir: Path | None = None
             ) -> subprocess.CompletedProcess[str]:
    child_env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_IFNAME": ifname, "CNI_NETNS": netns_path,
                 "CNI_PATH": cni_path(), "SRIOVOP_CNI_SOCKET_DIR": str(socket_dir or env["sockets"]),
                 "PATH": os.environ["PATH"]}
    return subprocess.run([*(prefix or []), str(env["bin"] / "sriov")], input=json.dumps(conf) if conf else "",
                          env=child_env, capture_output=True, text=True, timeout=120, check=False)


def conf_for(pci: str, tmp: Path) -> dict[str, Any]:
    return {"cniVersion": "1.0.0", "name": "shim-net", "type": "sriov", "deviceID": pci, "vlan": 12,
            "mac": "02:00:00:00:12:01",
            "ipam": {"type": "host-local", "subnet": "10.77.0.0/24", "dataDir": str(tmp / "ipam")}}


def new_ns(env: dict[str, Any]) -> str:
    name = f"shimpod-{len(env['names'])}-{os.getpid()}"
    netns.create(name)
    env["names"].append(name)
    return name


def test_add_and_del_through_the_shim_with_the_netns_passed_as_a_descriptor(served: dict[str, Any]) -> None:
    pci, host_name = sorted(served["vfs"].items())[0]
    pod = new_ns(served)
    # The netns is visible to the shim only: a bind mount in a private mount namespace, over a path
    # that is an ordinary empty file where the server looks. Only the passed descriptor can work.
    private = served["tmp"] / "private-netns"
    private.touch()
    wrap = ["unshare", "-m", "--propagation", "private", "sh", "-c",
            f'mount --bind /var/run/netns/{pod} {private} && exec "$0"']
    conf = conf_for(pci, served["tmp"])
    add = run_shim(served, "ADD", conf, str(private), prefix=wrap)
    assert add.returncode == 0, add.stdout + add.stderr
    result = json.loads(add.stdout)
    assert result["interfaces"][0]["mac"] == "02:00:00:00:12:01"
    assert result["interfaces"][0]["sandbox"] == str(private)
    with IPRoute(netns=pod) as ipr:
        [index] = ipr.link_lookup(ifname="net1")
        addrs = [a.get_attr("IFA_ADDRESS") for a in ipr.get_addr(index=index, family=2)]
    assert addrs == [result["ips"][0]["address"].split("/")[0]]
    dele = run_shim(served, "DEL", conf, str(private), prefix=wrap)
    assert dele.returncode == 0, dele.stdout + dele.stderr
    with IPRoute(netns=served["sim"].netns) as ipr:
        assert ipr.link_lookup(ifname=host_name)


def test_concurrent_adds_are_served_in_parallel(served: dict[str, Any]) -> None:
    vfs = sorted(served["vfs"])
    pods = [new_ns(served) for _ in vfs]

    def add(i: int) -> subprocess.CompletedProcess[str]:
        conf = conf_for(vfs[i], served["tmp"])
        conf["mac"] = f"02:00:00:00:13:0{i}"
        return run_shim(served, "ADD", conf, f"/var/run/netns/{pods[i]}", cid=f"c{i}")

    with ThreadPoolExecutor(len(vfs)) as pool:
        results = list(pool.map(add, range(len(vfs))))
    assert [r.returncode for r in results] == [0] * len(vfs), [r.stdout for r in results]
    ips = {json.loads(r.stdout)["ips"][0]["address"] for r in results}
    assert len(ips) == len(vfs)


def test_version_and_errors_come_back_as_cni_json(served: dict[str, Any]) -> None:
    version = run_shim(served, "VERSION", None, "")
    assert version.returncode == 0 and "1.0.0" in json.loads(version.stdout)["supportedVersions"]
    bad = run_shim(served, "ADD", {"cniVersion": "1.0.0", "name": "n", "type": "sriov", "vlan": 5000,
                                   "deviceID": "0000:18:02.0"}, "/var/run/netns/none")
    assert bad.returncode == 1 and json.loads(bad.stdout)["details"].startswith("vlan:")


def test_missing_server_is_named(served: dict[str, Any], tmp_path: Path) -> None:
    out = run_shim(served, "VERSION", None, "", socket_dir=tmp_path / "nowhere")
    err = json.loads(out.stdout)
    assert out.returncode == 1 and str(tmp_path / "nowhere" / "sriov.sock") in err["msg"]


def test_only_root_reaches_the_server(served: dict[str, Any]) -> None:
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    # The directory is 0700: a non-root caller cannot even reach the socket.
    assert oct(served["sockets"].stat().st_mode & 0o777) == "0o700"
    assert oct((served["sockets"] / "sriov.sock").stat().st_mode & 0o777) == "0o600"
    blocked = run_shim(served, "VERSION", None, "", prefix=nobody)
    assert blocked.returncode == 1 and "permission denied" in json.loads(blocked.stdout)["details"]
    # Even with the permissions opened up, SO_PEERCRED refuses a non-root peer.
    served["sockets"].chmod(0o755)
    (served["sockets"] / "sriov.sock").chmod(0o666)
    refused = run_shim(served, "VERSION", None, "", prefix=nobody)
    err = json.loads(refused.stdout)
    assert refused.returncode == 1 and err["msg"] == "permission denied" and "uid 65534" in err["details"]


def test_install_copies_the_shim_atomically(shim: Path, tmp_path: Path) -> None:
    target = tmp_path / "opt-cni-bin"
    target.mkdir()
    out = subprocess.run([str(shim), "install", "sriov", "ib-sriov", "--no-sleep"], capture_output=True, text=True,
                         env={"SRIOVOP_CNI_BIN_DIR": str(target)}, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in target.iterdir()) == ["ib-sriov", "sriov"]
    for name in ("sriov", "ib-sriov"):
        assert (target / name).read_bytes() == shim.read_bytes() and os.access(target / name, os.X_OK)
