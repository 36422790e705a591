from __future__ import annotations

import copy
from typing import Any

import pytest

from sriovop.api.v1.policydefaults import apply_policy_defaults, policy_defaults_patch, policy_priority


def policy(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"resourceName": "r", "numVfs": 1, **spec}}


@pytest.mark.parametrize(("spec", "ops"), [
    ({}, [("/spec/priority", 99), ("/spec/isRdma", False)]),
    ({"priority": 0}, [("/spec/isRdma", False)]),  # an explicit 0 is kept
    ({"priority": 10, "isRdma": False}, []),
    ({"isRdma": True, "priority": 5}, []),
    ({"linkType": "IB", "priority": 5}, [("/spec/isRdma", True)]),
    ({"linkType": "ib", "priority": 5, "isRdma": False}, [("/spec/isRdma", True)]),
    ({"linkType": "Ib", "priority": 5, "isRdma": True}, []),
    ({"linkType": "IB", "deviceType": "vfio-pci", "priority": 5}, [("/spec/isRdma", False)]),
    ({"linkType": "IB", "deviceType": "netdevice", "priority": 5}, [("/spec/isRdma", True)]),
    ({"linkType": "eth", "priority": 5}, [("/spec/isRdma", False)]),
])
def test_patch(spec: dict[str, Any], ops: list[tuple[str, Any]]) -> None:
    patch = policy_defaults_patch(policy(**spec))
    assert [(op["path"], op["value"]) for op in patch] == ops
    assert all(op["op"] == "add" for op in patch)


def test_the_default_policy_and_specless_objects_are_left_alone() -> None:
    assert policy_defaults_patch(policy("default")) == []
    assert policy_defaults_patch({"metadata": {"name": "p"}}) == []


def test_apply_matches_the_patch_and_is_idempotent() -> None:
    p = policy(linkType="IB")
    before = copy.deepcopy(p)
    apply_policy_defaults(p)
    assert p["spec"] == {**before["spec"], "priority": 99, "isRdma": True}
    assert policy_defaults_patch(p) == []


def test_policy_priority() -> None:
    assert policy_priority(policy()) == 99
    assert policy_priority(policy(priority=0)) == 0
    assert policy_priority({}) == 99
