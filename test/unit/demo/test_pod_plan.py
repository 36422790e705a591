"""`sriovop demo pod`'s planning and argument handling: which cluster, which images, which steps, and the
refusals that must come before anything starts. No host is touched (files in tmp_path only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sriovop.cli import main
from sriovop.demo import vfpod
from sriovop.demo.podplan import (
    GUEST_IMAGES,
    HOST_IMAGES,
    ClusterState,
    PlanError,
    PodDemoOptions,
    cluster_state,
    make_plan,
)
from sriovop.exitcodes import NO_ANSWER


def images(tmp_path: Path, names: tuple[str, ...] = HOST_IMAGES, sub: str = "images") -> Path:
    directory = tmp_path / sub
    directory.mkdir(exist_ok=True)
    for name in names:
        (directory / name).write_bytes(b"")
    return directory


def options(tmp_path: Path, **kw: object) -> PodDemoOptions:
    base: dict[str, object] = {"directory": tmp_path / "cluster", "nodes": 1, "images": images(tmp_path),
                               "keep": False, "timeout": 600.0}
    base.update(kw)
    return PodDemoOptions(**base)  # type: ignore[arg-type]


def test_no_cluster_brings_one_up_and_stops_it_at_the_end(tmp_path: Path) -> None:
    plan = make_plan(options(tmp_path, nodes=2), ClusterState.ABSENT)
    assert not plan.reuse
    assert plan.steps[0] == "cluster up: 2 host node(s) + the QEMU guest node sriovop-vm-1"
    assert plan.steps[-1] == "cluster down (guest included)"
    assert [p.name for p in plan.guest_images] == list(GUEST_IMAGES)
    assert {p.name for p in plan.host_images} == {"operator.tar", "webhook.tar", *GUEST_IMAGES}


def test_a_cluster_with_its_guest_is_reused_and_only_the_demos_objects_are_deleted(tmp_path: Path) -> None:
    plan = make_plan(options(tmp_path), ClusterState.WITH_GUEST)
    assert plan.reuse
    assert plan.steps[0].startswith("reuse the cluster in ")
    assert plan.steps[-1] == "delete the pod, the network and the policy"


def test_keep_plans_no_cleanup_step_and_names_the_down_command(tmp_path: Path) -> None:
    plan = make_plan(options(tmp_path, keep=True), ClusterState.ABSENT)
    assert len(plan.steps) == 8 and "down" not in plan.steps[-1]
    assert plan.down_command == f"sriovop dev cluster down --dir {tmp_path / 'cluster'}"


@pytest.mark.parametrize(("kw", "state", "message"), [
    ({"nodes": 0}, ClusterState.ABSENT, "--nodes: expected 1 or more host nodes"),
    ({"timeout": 0.0}, ClusterState.ABSENT, "--timeout: expected seconds above 0"),
    ({}, ClusterState.WITHOUT_GUEST, "a cluster without a QEMU guest node runs there"),
])
def test_refusals_name_the_option_and_the_reason(tmp_path: Path, kw: dict[str, object], state: ClusterState,
                                                 message: str) -> None:
    with pytest.raises(PlanError, match=message):
        make_plan(options(tmp_path, **kw), state)


def test_missing_archives_are_named_before_anything_starts(tmp_path: Path) -> None:
    partial = images(tmp_path, ("operator.tar", "config-daemon.tar"), sub="partial")
    with pytest.raises(PlanError) as err:
        make_plan(options(tmp_path, images=partial), ClusterState.ABSENT)
    assert "webhook.tar" in str(err.value) and "device-plugin.tar" in str(err.value)
    assert "operator.tar" not in str(err.value) and "make images" in str(err.value)


def test_cluster_state_reads_ready_and_the_recorded_guest(tmp_path: Path) -> None:
    assert cluster_state(tmp_path, supervisor_alive=True) is ClusterState.ABSENT  # not ready yet
    (tmp_path / "ready").write_text("{}")
    assert cluster_state(tmp_path, supervisor_alive=False) is ClusterState.ABSENT  # a stale ready file
    assert cluster_state(tmp_path, supervisor_alive=True) is ClusterState.WITHOUT_GUEST
    (tmp_path / "vm-nodes.json").write_text(json.dumps({"sriovop-vm-1": {"pid": 1, "job": "/j", "console": "/c"}}))
    assert cluster_state(tmp_path, supervisor_alive=True) is ClusterState.WITH_GUEST


def test_the_pod_names_the_network_only_in_its_annotation() -> None:
    pod = vfpod.pod("sriovop-vm-1")
    assert pod["metadata"]["annotations"] == {vfpod.NETWORKS_ANNOTATION: vfpod.NETWORK}
    assert "resources" not in pod["spec"]["containers"][0]  # the injector adds the VF request
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "sriovop-vm-1"}
    network = vfpod.network()["spec"]
    assert (network["vlan"], json.loads(network["ipam"])["type"]) == (100, "host-local")
    assert vfpod.policy("sriovop-vm-1")["spec"]["numVfs"] == 4


def test_cli_refuses_zero_nodes_as_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "pod", "--dir", str(tmp_path / "c"), "--nodes", "0",
                                       "--images", str(images(tmp_path))])
    assert result.exit_code == NO_ANSWER, result.output
    assert "--nodes: expected 1 or more host nodes" in result.output
    assert not (tmp_path / "c").exists()  # nothing was started


@pytest.mark.parametrize(("args", "message"), [
    (["--vm-nodes", "1"], "needs --nodes 1 or more"),
    (["--nodes", "1", "--vm-nodes", "2"], "not in the range 0<=x<=1"),
    (["--nodes", "1", "--vm-image", "IMG"], "given without --vm-nodes"),
])
def test_dev_cluster_up_refuses_vm_node_options_before_starting(tmp_path: Path, args: list[str],
                                                                message: str) -> None:
    archive = tmp_path / "a.tar"
    archive.write_bytes(b"")
    args = [str(archive) if a == "IMG" else a for a in args]
    result = CliRunner().invoke(main, ["dev", "cluster", "up", "--dir", str(tmp_path / "c"), *args])
    assert result.exit_code == NO_ANSWER, result.output
    assert message in result.output
    assert not (tmp_path / "c").exists()
