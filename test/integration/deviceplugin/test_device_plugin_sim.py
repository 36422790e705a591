"""`sriovop device-plugin` as a process on the simulated SR-IOV host, against a stand-in for the kubelet's
Registration service (test/support/kubelet_registry.py; the real kubelet is in
test/integration/cluster/test_device_plugin_kubelet.py): registration, the ListAndWatch stream, Allocate
and device-info files, health following the PF link, re-registration after a kubelet restart, config
reload through a ConfigMap-style symlink swap, clean exit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.host.netlink import Netlink
from test.support.device_plugin_process import device_plugin
from test.support.host_sim import applier, sim_host
from test.support.kubelet_registry import FakeKubeletRegistry, Stream, allocate, other_rpcs
from test.support.poll import wait_for


def _config(path: Path, resources: list[dict[str, object]]) -> None:
    """Write like the kubelet updates a ConfigMap volume: a new data directory, then swap `..data`."""
    base = path.parent
    version = base / f"..v_{len(list(base.glob('..v_*')))}"
    version.mkdir()
    (version / path.name).write_text(json.dumps({"resourceList": resources}))
    tmp = base / "..data_tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(version.name)
    os.replace(tmp, base / "..data")
    if not path.is_symlink():
        path.symlink_to(f"..data/{path.name}")


@pytest.fixture
def sim_vfs(tmp_path: Path) -> Iterator[tuple[Path, str, str, list[str]]]:
    """A simulated host (one E810 PF with 4 VFs): (root, netns, PF name, VF PCI addresses)."""
    with sim_host(tmp_path, ["e810:1"]) as (sim, host):
        pf = host.discover()[0]
        applier(host).apply([{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 4,
                              "vfGroups": [{"deviceType": "netdevice", "vfRange": "0-3"}]}])
        vfs = [v["pciAddress"] for v in host.discover()[0]["Vfs"]]
        yield sim.root, sim.netns, pf["name"], vfs


def test_device_plugin_on_the_simulated_host(sim_vfs: tuple[Path, str, str, list[str]], tmp_path: Path) -> None:
    root, netns, pf_name, vfs = sim_vfs
    dp_dir, devinfo, config = tmp_path / "device-plugins", tmp_path / "devinfo", tmp_path / "pcidp" / "node-1"
    config.parent.mkdir()
    _config(config, [{"resourceName": "low", "selectors": [{"pfNames": [f"{pf_name}#0-1"]}]}])
    kubelet = FakeKubeletRegistry(dp_dir).start()
    log = tmp_path / "device-plugin.log"
    streams: list[Stream] = []
    try:
        with device_plugin(log, f"--config-file={config}", "--resource-prefix=sim.io", f"--host-root={root}",
                           "--simulated-host",
                           f"--device-plugin-dir={dp_dir}", f"--devinfo-dir={devinfo}", "--watch-interval=0.3",
                           "--health-interval=0.3") as proc:
            wait_for(lambda: kubelet.registered(), timeout=60, what="the plugin's Register")
            assert kubelet.registered() == [("v1beta1", "sim.io_low.sock", "sim.io/low")]
            socket = dp_dir / "sim.io_low.sock"
            stream = Stream(socket)
            streams.append(stream)
            wait_for(stream.latest, timeout=30, what="the first device list")
            assert stream.latest() == {vfs[0]: "Healthy", vfs[1]: "Healthy"}

            # Allocate: env, device-info file
            response = allocate(socket, [vfs[1]])
            assert dict(response.envs)["PCIDEVICE_SIM_IO_LOW"] == vfs[1] and not response.devices
            assert other_rpcs(socket, vfs[:2]) == (False, False, [], "INVALID_ARGUMENT")  # as upstream: no preference
            info = devinfo / f"sim.io-low-{vfs[1]}-device.json"
            assert json.loads(info.read_text()) == {"type": "pci", "version": "1.1.0", "pci": {"pci-address": vfs[1]}}

            # Health follows the PF's link
            with Netlink(netns) as nl:
                nl.set_down(pf_name)
                wait_for(lambda: stream.latest() == dict.fromkeys(vfs[:2], "Unhealthy"), timeout=30,
                         what="Unhealthy VFs after the PF link went down")
                nl.set_up(pf_name)
                wait_for(lambda: stream.latest() == dict.fromkeys(vfs[:2], "Healthy"), timeout=30,
                         what="Healthy VFs after the PF link came back")

            # A kubelet restart empties the directory and serves a new kubelet.sock: the plugin registers again.
            kubelet.stop()
            kubelet.start()
            wait_for(lambda: len(kubelet.registered()) == 2, timeout=30, what="registration after the kubelet restart")
            wait_for(lambda: socket.is_socket(), timeout=30, what="the plugin's socket served again")
            wait_for(stream.ended.is_set, timeout=30, what="the old ListAndWatch stream to end")
            stream = Stream(socket)
            streams.append(stream)
            wait_for(stream.latest, timeout=30, what="the device list after re-registration")
            assert info.exists(), "a kubelet restart must not remove the device-info files of running pods"

            # Config reload: a new resource registers; the unchanged one keeps its stream and registration.
            _config(config, [{"resourceName": "low", "selectors": [{"pfNames": [f"{pf_name}#0-1"]}]},
                             {"resourceName": "high", "selectors": [{"pfNames": [f"{pf_name}#2-3"]}]}])
            wait_for(lambda: len(kubelet.registered()) == 3, timeout=30, what="registration of the new resource")
            assert kubelet.registered()[2] == ("v1beta1", "sim.io_high.sock", "sim.io/high")
            high = Stream(dp_dir / "sim.io_high.sock")
            streams.append(high)
            wait_for(high.latest, timeout=30, what="the new resource's device list")
            assert high.latest() == {vfs[2]: "Healthy", vfs[3]: "Healthy"}
            assert not stream.ended.is_set() and len(kubelet.registered()) == 3

            # A broken config is refused and changes nothing.
            _config(config, [{"resourceName": "low"}, {"resourceName": "low"}])
            wait_for(lambda: "duplicate resource sim.io/low" in log.read_text(), timeout=30,
                     what="the refused config logged")
            assert proc.poll() is None and not stream.ended.is_set()
    finally:
        for stream_ in streams:
            stream_.close()
        kubelet.stop()
    assert not list(devinfo.glob("*.json")), "device-info files are removed when the plugin stops"
    assert not (dp_dir / "sim.io_low.sock").exists()
