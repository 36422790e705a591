from __future__ import annotations

from typing import Any

import pytest

from sriovop.api.v1.selectors import (
    LabelSelectorError,
    label_selector_matches,
    node_selector_matches,
    policy_selects_node,
)

LABELS = {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux", "pool": "a"}


@pytest.mark.parametrize(("selector", "matches"), [
    (None, True),
    ({}, True),
    ({"node-role.kubernetes.io/worker": ""}, True),
    ({"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}, True),
    ({"kubernetes.io/os": "windows"}, False),
    ({"missing": ""}, False),  # an empty value still needs the key
    ({"pool": "a", "zone": "x"}, False),
])
def test_node_selector(selector: dict[str, str] | None, matches: bool) -> None:
    assert node_selector_matches(selector, LABELS) is matches


def test_policy_selects_node() -> None:
    node = {"metadata": {"name": "n", "labels": LABELS}}
    assert policy_selects_node({"spec": {"nodeSelector": {"pool": "a"}}}, node)
    assert not policy_selects_node({"spec": {"nodeSelector": {"pool": "b"}}}, node)
    assert not policy_selects_node({"spec": {"nodeSelector": {"pool": "a"}}}, {"metadata": {"name": "bare"}})
    assert policy_selects_node({"spec": {"nodeSelector": {}}}, {"metadata": {"name": "bare"}})


@pytest.mark.parametrize(("selector", "matches"), [
    (None, True),
    ({}, True),
    ({"matchLabels": {"pool": "a"}}, True),
    ({"matchLabels": {"pool": "b"}}, False),
    ({"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a", "b"]}]}, True),
    ({"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["a"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),  # absent key
    ({"matchExpressions": [{"key": "pool", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "pool", "operator": "DoesNotExist"}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True),
    ({"matchLabels": {"pool": "a"}, "matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
])
def test_label_selector(selector: dict[str, Any] | None, matches: bool) -> None:
    assert label_selector_matches(selector, LABELS) is matches


@pytest.mark.parametrize(("req", "fragment"), [
    ({"key": "a", "operator": "Equals", "values": ["x"]}, "Unsupported value: 'Equals'"),
    ({"key": "a", "operator": "In"}, "must be specified"),
    ({"key": "a", "operator": "Exists", "values": ["x"]}, "may not be specified"),
    ({"operator": "Exists"}, "key: Required value"),
])
def test_invalid_label_selectors_raise(req: dict[str, Any], fragment: str) -> None:
    with pytest.raises(LabelSelectorError, match=fragment):
        label_selector_matches({"matchExpressions": [req]}, LABELS)
