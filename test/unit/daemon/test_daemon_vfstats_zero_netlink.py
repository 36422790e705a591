"""Zero-filled netlink VF stats (a PF driver without ndo_get_vf_stats, e.g. igb) do not hide the VF
netdev's own counters; real netlink counters still win, and zeros stay when nothing else is known."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sriovop.host.paths import HostPaths
from sriovop.host.vfmetrics import VfStatsCollector, iter_series
from test.unit.daemon.test_daemon_vfstats import make_pf, write_stats

PF, VF0, VF1 = "0000:01:00.0", "0000:01:10.0", "0000:01:10.2"
ZEROS = {"rx_bytes": 0, "tx_bytes": 0, "rx_packets": 0, "tx_packets": 0, "rx_dropped": 0, "tx_dropped": 0}


class FakeNetlink:
    def __init__(self, by_vf: dict[int, dict[str, int]]) -> None:
        self.netns = None
        self.by_vf = by_vf

    def for_pf(self, pf_name: str) -> dict[int, dict[str, int]]:
        assert pf_name == "eth0"
        return self.by_vf

    def close(self) -> None:
        pass


def scrape(root: Path, netlink: dict[int, dict[str, int]], monkeypatch: pytest.MonkeyPatch) -> dict[Any, float]:
    collector = VfStatsCollector(HostPaths.at(root), "node-1")
    monkeypatch.setattr(collector, "_nl", lambda: FakeNetlink(netlink))
    return {(n, lb["vf"]): v for n, lb, v in iter_series(collector.render())}


def test_zero_netlink_stats_fall_back_to_the_vf_netdev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_pf(tmp_path, PF, "eth0", [VF0, VF1])
    devices = tmp_path / "sys/bus/pci/devices"
    write_stats(devices / VF0 / "net/eth1/statistics", rx_bytes=60, tx_bytes=266, rx_packets=1, tx_packets=3,
                rx_dropped=0, tx_dropped=0)
    series = scrape(tmp_path, {0: dict(ZEROS), 1: dict(ZEROS)}, monkeypatch)
    assert series[("sriov_vf_tx_packets", "0")] == 3 and series[("sriov_vf_tx_bytes", "0")] == 266
    # VF 1 has no netdev counters: the (genuine or zero-filled) netlink zeros are still reported.
    assert series[("sriov_vf_tx_packets", "1")] == 0


def test_nonzero_netlink_stats_win_over_sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_pf(tmp_path, PF, "eth0", [VF0])
    write_stats(tmp_path / "sys/bus/pci/devices" / VF0 / "net/eth1/statistics", tx_packets=3)
    series = scrape(tmp_path, {0: {**ZEROS, "tx_packets": 40}}, monkeypatch)
    assert series[("sriov_vf_tx_packets", "0")] == 40
