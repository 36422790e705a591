"""The operator's informer transforms drop only fields no controller reads (pure logic, no host)."""

from __future__ import annotations

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.operator.cache_trim import CACHE_TRANSFORMS
from sriovop.runtime.kinds import NODE


def test_node_keeps_metadata_and_spec_and_loses_status() -> None:
    node = {"metadata": {"name": "n1", "labels": {"a": "b"}, "annotations": {"x": "y"}},
            "spec": {"unschedulable": True}, "status": {"images": [{"names": ["img"], "sizeBytes": 1}]}}
    assert CACHE_TRANSFORMS[NODE](node) == {"metadata": {"name": "n1", "labels": {"a": "b"},
                                                         "annotations": {"x": "y"}},
                                            "spec": {"unschedulable": True}}


def test_node_state_loses_only_the_vf_lists() -> None:
    pf = {"name": "ens1f0", "pciAddress": "0000:3b:00.0", "vendor": "8086", "deviceID": "159b", "numVfs": 2,
          "totalvfs": 64, "netFilter": "", "linkType": "ETH"}
    state = {"metadata": {"name": "n1"}, "spec": {"interfaces": [{"name": "ens1f0", "numVfs": 2}]},
             "status": {"syncStatus": "Succeeded", "interfaces": [
                 {**pf, "Vfs": [{"pciAddress": "0000:3b:01.0", "vfID": 0}, {"pciAddress": "0000:3b:01.1", "vfID": 1}]},
                 {"name": "eno1", "pciAddress": "0000:01:00.0"}]}}
    out = CACHE_TRANSFORMS[SRIOV_NETWORK_NODE_STATE](state)
    assert out["status"] == {"syncStatus": "Succeeded",
                             "interfaces": [pf, {"name": "eno1", "pciAddress": "0000:01:00.0"}]}
    assert out["spec"] == {"interfaces": [{"name": "ens1f0", "numVfs": 2}]}


def test_node_state_without_status_is_unchanged() -> None:
    assert CACHE_TRANSFORMS[SRIOV_NETWORK_NODE_STATE]({"metadata": {"name": "n1"}}) == {"metadata": {"name": "n1"}}
