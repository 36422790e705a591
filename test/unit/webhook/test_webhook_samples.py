"""Every sample in manifests/samples (upstream-style YAML) is admitted by the webhook, after defaulting,
on a cluster whose NodeStates report the NICs the samples select."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sriovop.api.v1.supportednics import default_supported_nics
from sriovop.webhook.cluster_view import StaticClusterView
from sriovop.webhook.handler import MUTATING_PATH, VALIDATING_PATH, AdmissionHandler
from test.support.webhook_objects import SETTINGS, apply_json_patch, iface, node, node_state, review

SAMPLES = sorted((Path(__file__).resolve().parents[3] / "manifests" / "samples").glob("*.yaml"))
NETFILTER = "openstack/NetworkID:ada9ec67-2c97-467c-b674-c47200e2f5b5"


def _cluster() -> StaticClusterView:
    worker = node("worker-0", {"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "worker-0",
                               "feature.node.kubernetes.io/network-sriov.capable": "true"})
    vm = node("vm-0", {"node-role.kubernetes.io/worker": ""}, provider_id="openstack:///7c1b")
    states = [
        node_state("worker-0", [
            iface("ens1f0", "0000:3b:00.0", "8086", "158b"),
            iface("ens1f1", "0000:3b:00.1", "8086", "158b"),
            iface("enp216s0f0np0", "0000:d8:00.0", "15b3", "101d", totalvfs=16, numvfs=8, mtu=9000),
            iface("ib0", "0000:af:00.0", "15b3", "101b", totalvfs=16, link_type="IB"),
        ]),
        node_state("vm-0", [iface("eth1", "0000:00:05.0", "15b3", "101e", totalvfs=1, numvfs=1,
                                  net_filter=NETFILTER)]),
    ]
    return StaticClusterView([worker, vm], states, [], [], default_supported_nics())


def _docs() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in SAMPLES:
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc and doc.get("kind") != "SriovNetworkNodeState":
                out.append((f"{path.stem}#{i}", doc))
    return out


def test_there_are_samples_of_every_judged_kind() -> None:
    kinds = {doc["kind"] for _, doc in _docs()}
    assert kinds >= {"SriovNetworkNodePolicy", "SriovNetwork", "SriovIBNetwork", "OVSNetwork",
                     "SriovOperatorConfig", "SriovNetworkPoolConfig"}


@pytest.mark.parametrize(("doc"), [d for _, d in _docs()], ids=[n for n, _ in _docs()])
def test_sample_is_admitted(doc: dict[str, Any]) -> None:
    handler = AdmissionHandler(_cluster(), SETTINGS)
    kind = doc["kind"]
    status, answer = handler.handle(MUTATING_PATH, json.dumps(review(kind, doc)).encode())
    assert status == 200 and answer["response"]["allowed"] is True
    if "patch" in answer["response"]:
        doc = apply_json_patch(doc, json.loads(base64.b64decode(answer["response"]["patch"])))
    status, answer = handler.handle(VALIDATING_PATH, json.dumps(review(kind, doc)).encode())
    assert status == 200
    assert answer["response"]["allowed"] is True, answer["response"].get("status")
    if kind == "SriovNetworkNodePolicy":
        assert doc["spec"]["priority"] in range(100) and isinstance(doc["spec"]["isRdma"], bool)
