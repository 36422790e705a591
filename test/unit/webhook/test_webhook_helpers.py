"""Pure helpers: pfNames ranges, selector matching, the NIC table, the review envelope."""

from __future__ import annotations

import base64
import json

import pytest

from sriovop.api.v1.pfnames import PfNameError
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.webhook.admission import BadReview, Verdict, parse_review, review_response
from sriovop.webhook.cluster_view import label_selector_string
from sriovop.webhook.selection import NO_RANGE, PfName, explain_mismatch, parse_pf_name, ranges_overlap
from sriovop.webhook.settings import WebhookSettings
from test.support.webhook_objects import intel_xxv710, review


@pytest.mark.parametrize(("entry", "expected"), [
    ("ens1f0", PfName("ens1f0")), ("ens1f0#0-3", PfName("ens1f0", 0, 3)), ("a#5-5", PfName("a", 5, 5)),
    ("a#+1-2", PfName("a", 1, 2)),
])
def test_parse_pf_name(entry: str, expected: PfName) -> None:
    assert parse_pf_name(entry) == expected


@pytest.mark.parametrize("entry", ["a#1", "a#1-2-3", "a##1-2", "a#-1", "a#1-", "a# 1-2", "a#\u0661-2", "a#2-1"])
def test_parse_pf_name_errors(entry: str) -> None:
    with pytest.raises(PfNameError):
        parse_pf_name(entry)


def test_ranges_overlap_with_upstream_sentinels() -> None:
    assert ranges_overlap(PfName("a", 0, 3), PfName("a", 3, 5))
    assert not ranges_overlap(PfName("a", 0, 3), PfName("a", 4, 5))
    assert ranges_overlap(PfName("a"), PfName("a"))
    assert not ranges_overlap(PfName("a"), PfName("a", 0, 3))
    assert PfName("a").first == NO_RANGE


def test_mismatch_explanations() -> None:
    pf = intel_xxv710(alt_names=["enp59s0f0"], net_filter="openstack/NetworkID:1")
    assert "vendor" in explain_mismatch({"vendor": "15b3"}, pf)
    assert "deviceID" in explain_mismatch({"deviceID": "1017"}, pf)
    assert "rootDevices" in explain_mismatch({"rootDevices": ["0000:00:00.0"]}, pf)
    assert "pfNames" in explain_mismatch({"pfNames": ["ens9#0-1"]}, pf)
    assert "netFilter" in explain_mismatch({"netFilter": "aws/NetworkID:1"}, pf)


def test_supported_nics_table() -> None:
    nics = SupportedNics.from_configmap_data({"a": "8086 158B 154c", "b": "15b3 101d 101e"})
    assert nics.is_supported_vendor("8086") and not nics.is_supported_vendor("1234")
    assert nics.is_supported_model("8086", "158b") and not nics.is_supported_model("15b3", "158b")
    assert nics.is_supported_device("101d") and nics.is_vf_supported_model("15b3", "101e")
    with pytest.raises(ValueError, match="'bad'"):
        SupportedNics.from_configmap_data({"bad": "8086 158b"})
    lenient = SupportedNics.from_configmap_data({"bad": "8086 158b", "ok": "8086 1572 154c"}, strict=False)
    assert len(lenient) == 1 and "'bad'" in lenient.errors[0]


def test_label_selector_string_falls_back_for_odd_values() -> None:
    assert label_selector_string({"b": "2", "a/x": ""}) == "a/x=,b=2"
    assert label_selector_string({"a": "has space"}) is None


def test_settings_from_env() -> None:
    s = WebhookSettings.from_env(env={"NAMESPACE": "ns", "DEV_MODE": "TRUE"})
    assert (s.namespace, s.resource_prefix, s.dev_mode) == ("ns", "openshift.io", True)
    assert WebhookSettings.from_env("flag", env={"DEV_MODE": "true"}).dev_mode is False
    with pytest.raises(ValueError, match="--namespace"):
        WebhookSettings.from_env(env={})
    with pytest.raises(ValueError, match="RESOURCE_PREFIX"):
        WebhookSettings.from_env(env={"NAMESPACE": "ns", "RESOURCE_PREFIX": ""})


def test_review_envelope_round_trip() -> None:
    body = review("SriovNetworkNodePolicy", {"metadata": {"name": "p"}}, "DELETE")
    body["request"]["oldObject"] = {"metadata": {"name": "p"}}
    request = parse_review(json.dumps(body).encode())
    assert request.subject == {"metadata": {"name": "p"}}
    out = review_response(request.uid, Verdict(True, patch=[{"op": "add", "path": "/x", "value": 1}],
                                              warnings=["w"]))
    assert out["response"]["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(out["response"]["patch"])) == [{"op": "add", "path": "/x", "value": 1}]
    assert out["response"]["warnings"] == ["w"]
    body["request"]["operation"] = "PATCH"
    with pytest.raises(BadReview, match="operation"):
        parse_review(json.dumps(body).encode())
