"""The VF ownership check of `sriov` ADD (sriovop.cni.deviceowner), against pod-resources answers given
as data. Host: none (the kubelet's answers are the input; the real kubelet is in
test/integration/cluster/test_vf_pod_churn.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sriovop.cni.deviceowner import check_owner
from sriovop.cni.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from sriovop.cni.plugin import SriovPlugin
from sriovop.cni.server import CniRequest
from sriovop.kubelet.channel import KubeletApiError
from sriovop.kubelet.podresources import ContainerDevices, ContainerResources, PodResources

SOCKET = Path("/kubelet/pod-resources/kubelet.sock")
RES = "openshift.io/vfs"
MANAGED = [ContainerDevices(RES, ("0000:01:00.1", "0000:01:00.2", "0000:01:00.3"))]


def _pod(ns: str, name: str, *devices: str) -> PodResources:
    return PodResources(name, ns, (ContainerResources("main", (ContainerDevices(RES, devices),)),))


PODS = [_pod("a", "holder", "0000:01:00.1"), _pod("b", "other", "0000:01:00.2")]


def _args(ns: str, name: str) -> str:
    return f"IgnoreUnknown=true;K8S_POD_NAMESPACE={ns};K8S_POD_NAME={name};K8S_POD_INFRA_CONTAINER_ID=x"


def _check(args: str, device: str, pods: list[PodResources] = PODS) -> None:
    check_owner(SOCKET, args, device, lister=lambda _s: pods, allocatable=lambda _s: MANAGED)


def test_the_pod_holding_the_vf_may_take_it() -> None:
    _check(_args("a", "holder"), "0000:01:00.1")


def test_a_vf_held_by_another_pod_is_refused_naming_the_holder() -> None:
    with pytest.raises(CniError) as err:
        _check(_args("b", "other"), "0000:01:00.1")
    assert err.value.code == INVALID_CONFIG and err.value.msg == "VF allocated to another pod"
    assert err.value.details == "deviceID: 0000:01:00.1 is allocated by the kubelet to a/holder, not to b/other"


def test_a_free_managed_vf_is_refused_to_a_pod_that_was_not_given_it() -> None:
    with pytest.raises(CniError) as err:
        _check(_args("b", "other"), "0000:01:00.3")
    assert err.value.msg == "VF not allocated to this pod" and "0000:01:00.3" in err.value.details
    with pytest.raises(CniError):
        _check("", "0000:01:00.3")  # no pod named at all


def test_a_vf_no_device_plugin_manages_is_left_to_the_plugin() -> None:
    _check(_args("b", "other"), "0000:05:00.1")


def test_an_unreachable_kubelet_refuses_with_try_again_later() -> None:
    def down(_s: Path) -> list[PodResources]:
        raise KubeletApiError(SOCKET, "List", "UNAVAILABLE", "connection refused")

    with pytest.raises(CniError) as err:
        check_owner(SOCKET, _args("a", "holder"), "0000:01:00.1", lister=down, allocatable=lambda _s: MANAGED)
    assert err.value.code == TRY_AGAIN_LATER and str(SOCKET) in err.value.details


def test_add_refused_by_the_check_never_reaches_the_device(tmp_path: Path) -> None:
    """The plugin asks before it touches anything: with no kubelet socket there, ADD fails and no node
    state is read or written (the Node given is never used)."""
    plugin = SriovPlugin(node=None, pod_resources=tmp_path / "absent.sock")  # type: ignore[arg-type]
    conf = {"cniVersion": "1.0.0", "name": "n", "type": "sriov", "deviceID": "0000:01:00.1"}
    req = CniRequest("sriov", {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c", "CNI_IFNAME": "net1",
                               "CNI_NETNS": "/proc/1/ns/net", "CNI_ARGS": _args("a", "holder")},
                     json.dumps(conf).encode())
    response = plugin(req)
    err = json.loads(response.stdout)
    assert response.exit_code == 1 and err["code"] == TRY_AGAIN_LATER, err
