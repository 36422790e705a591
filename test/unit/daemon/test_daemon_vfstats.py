"""Per-VF counters: netlink message parsing, sysfs sources and their priority, the text rendering."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sriovop.host.paths import HostPaths
from sriovop.host.vfmetrics import VfStatsCollector, iter_series
from sriovop.host.vfstats import list_vfs, parse_vf_stats


class Nla:
    """Just enough of pyroute2's nla interface (get_attr/get_attrs/[]) for the parser."""

    def __init__(self, attrs: list[tuple[str, Any]] | None = None, fields: dict[str, Any] | None = None) -> None:
        self.attrs = attrs or []
        self.fields = fields or {}

    def get_attr(self, name: str) -> Any:
        return next((v for k, v in self.attrs if k == name), None)

    def get_attrs(self, name: str) -> list[Any]:
        return [v for k, v in self.attrs if k == name]

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]


def vfinfo(index: int, **counters: int) -> Nla:
    stats = Nla([(f"IFLA_VF_STATS_{k.upper()}", v) for k, v in counters.items()])
    return Nla([("IFLA_VF_MAC", Nla(fields={"vf": index, "mac": "00:00:00:00:00:00"})), ("IFLA_VF_STATS", stats)])


def test_parse_vf_stats() -> None:
    msg = Nla([("IFLA_VFINFO_LIST", Nla([("IFLA_VF_INFO", vfinfo(0, rx_bytes=10, tx_bytes=20, rx_packets=1)),
                                         ("IFLA_VF_INFO", vfinfo(3, rx_dropped=7, tx_dropped=8)),
                                         ("IFLA_VF_INFO", Nla([]))]))])
    assert parse_vf_stats(msg) == {0: {"rx_bytes": 10, "tx_bytes": 20, "rx_packets": 1},
                                   3: {"rx_dropped": 7, "tx_dropped": 8}}
    assert parse_vf_stats(Nla([])) == {}


def make_pf(root: Path, pf: str, netdev: str, vfs: list[str]) -> None:
    devices = root / "sys/bus/pci/devices"
    (devices / pf / "net" / netdev).mkdir(parents=True)
    (devices / pf / "sriov_numvfs").write_text(f"{len(vfs)}\n")
    for i, vf in enumerate(vfs):
        (devices / vf).mkdir(parents=True)
        os.symlink(f"../{pf}", devices / vf / "physfn")
        os.symlink(f"../{vf}", devices / pf / f"virtfn{i}")


def write_stats(base: Path, **values: int) -> None:
    base.mkdir(parents=True, exist_ok=True)
    for k, v in values.items():
        (base / k).write_text(f"{v}\n")


def test_sysfs_sources_priority_and_rendering(tmp_path: Path) -> None:
    make_pf(tmp_path, "0000:18:00.0", "ens1f0", ["0000:18:02.0", "0000:18:02.1", "0000:18:02.2"])
    devices = tmp_path / "sys/bus/pci/devices"
    # VF 0: the PF-side stats (Intel drivers) win over the VF netdev's own counters.
    write_stats(devices / "0000:18:00.0/sriov/0/stats", rx_bytes=100, tx_bytes=200, rx_packets=1, tx_packets=2,
                rx_dropped=0, tx_dropped=3)
    write_stats(devices / "0000:18:02.0/net/ens1f0v0/statistics", rx_bytes=999)
    # VF 1: only its netdev's statistics. VF 2: nothing at all → no series.
    write_stats(devices / "0000:18:02.1/net/ens1f0v1/statistics", rx_bytes=5, tx_bytes=6, rx_packets=7,
                tx_packets=8, rx_dropped=9, tx_dropped=10)
    paths = HostPaths.at(tmp_path)
    assert [(v.pf_name, v.index, v.pci) for v in list_vfs(paths)] == [
        ("ens1f0", 0, "0000:18:02.0"), ("ens1f0", 1, "0000:18:02.1"), ("ens1f0", 2, "0000:18:02.2")]
    text = VfStatsCollector(paths, "node-1", sources=("sysfs",)).render()
    assert "# TYPE sriov_vf_rx_bytes counter" in text and "_total" not in text
    series = {(n, lb["vf"]): v for n, lb, v in iter_series(text)}
    assert series[("sriov_vf_rx_bytes", "0")] == 100 and series[("sriov_vf_tx_dropped", "0")] == 3
    assert series[("sriov_vf_rx_bytes", "1")] == 5 and series[("sriov_vf_tx_dropped", "1")] == 10
    assert not any(vf == "2" for _n, vf in series)
    labels = next(lb for n, lb, _v in iter_series(text) if n == "sriov_vf_tx_bytes" and lb["vf"] == "1")
    assert labels == {"pf": "ens1f0", "vf": "1", "pciAddr": "0000:18:02.1", "node": "node-1"}


def test_unknown_source_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown"):
        VfStatsCollector(HostPaths.at(tmp_path), "n", sources=("ethtool",))
