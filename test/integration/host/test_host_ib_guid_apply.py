"""InfiniBand VF GUIDs applied on the simulated SR-IOV host (a ConnectX-6 Dx PF, IB link type in the spec):
from the pool file when there is one, random otherwise, reported per VF as `guid`; an exhausted pool
fails the PF at step set-vf-guid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sriovop.host import ApplyError
from sriovop.host import steps as S
from sriovop.host.ib_guids import GUID_CONFIG_FILE
from test.support.host_sim import applier, pf_status, sim_host


def _ib_spec(pf: dict, num_vfs: int) -> dict:
    return {"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": num_vfs, "linkType": "IB",
            "vfGroups": [{"resourceName": "ib", "deviceType": "netdevice", "vfRange": f"0-{num_vfs - 1}",
                          "isRdma": True}]}


def test_guids_from_the_pool_file(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host):
        pf = host.discover()[0]
        pool = host.paths.root / GUID_CONFIG_FILE
        pool.parent.mkdir(parents=True)
        pool.write_text(json.dumps([{"pciAddress": pf["pciAddress"], "rangeStart": "00:00:00:00:00:0a:00:00",
                                     "rangeEnd": "00:00:00:00:00:0a:00:02"}]))
        applier(host).apply([_ib_spec(pf, 3)])
        vfs = pf_status(host, pf["pciAddress"])["Vfs"]
        assert [v["guid"] for v in vfs] == ["00:00:00:00:00:0a:00:00", "00:00:00:00:00:0a:00:01",
                                            "00:00:00:00:00:0a:00:02"]
        assert all(v["driver"] == "mlx5_core" for v in vfs)  # unbound for the GUID, bound again

        with pytest.raises(ApplyError) as info:
            applier(host).apply([_ib_spec(pf, 4)])
    assert info.value.step == S.SET_VF_GUID and "exhausted at VF 3" in info.value.reason


def test_random_guids_without_a_pool(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host):
        pf = host.discover()[0]
        applier(host).apply([_ib_spec(pf, 2)])
        guids = [v.get("guid") for v in pf_status(host, pf["pciAddress"])["Vfs"]]
    assert len(set(guids)) == 2 and all(g and int(g[:2], 16) & 0x02 for g in guids)
