"""Cost of the api/v1 helpers on the operator's and webhook's hot paths, printed as JSON.

Baseline (same run): the floor of touching the same dict keys without any logic. Not a test.
Usage: .venv/bin/python test/bench/api_helpers.py
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import benchlib  # noqa: F401  (puts the repository on sys.path: runnable as docs/benchmarks.md says)

from sriovop.api.v1 import kinds
from sriovop.api.v1.nicselector import nic_selector_matches
from sriovop.api.v1.schema.defaults import apply_defaults
from sriovop.api.v1.schema.validate import validate_object
from sriovop.api.v1.selectors import policy_selects_node
from test.support.api_samples import sample


def _time(fn: Callable[[], Any], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ifaces = [{"name": f"ens{i}f{j}", "pciAddress": f"0000:{i:02x}:00.{j}", "vendor": "8086",
               "deviceID": "158b", "altNames": [f"enp{i}s0f{j}"]} for i in range(500) for j in range(2)]
    selectors = [{"vendor": "8086", "pfNames": [f"ens{p}f0#0-3", "ens1f1"]} for p in range(50)]
    nodes = [{"metadata": {"name": f"n{i}", "labels": {"node-role.kubernetes.io/worker": "", "pool": str(i % 3)}}}
             for i in range(500)]
    policies = [{"spec": {"nodeSelector": {"node-role.kubernetes.io/worker": "", "pool": str(p % 3)}}}
                for p in range(50)]
    checks = len(ifaces) * len(selectors)

    def match_all() -> None:
        for s in selectors:
            for i in ifaces:
                nic_selector_matches(s, i)

    def floor_match() -> None:
        for s in selectors:
            for i in ifaces:
                _ = s.get("vendor") == i.get("vendor") and s.get("deviceID") and i.get("name") in s["pfNames"]

    def node_select() -> None:
        for p in policies:
            for n in nodes:
                policy_selects_node(p, n)

    policy = sample("SriovNetworkNodePolicy", "policy-switchdev-ovs")
    state = sample("SriovNetworkNodeState")

    def validate_many() -> None:
        for _ in range(1000):
            validate_object(kinds.SRIOV_NETWORK_NODE_POLICY, policy)

    def defaults_many() -> None:
        for _ in range(1000):
            apply_defaults(kinds.SRIOV_NETWORK_NODE_POLICY, {"spec": {"numVfs": 1}})

    def validate_states() -> None:
        for _ in range(200):
            validate_object(kinds.SRIOV_NETWORK_NODE_STATE, state)

    m, f = _time(match_all), _time(floor_match)
    out = {
        "nic_selector_matches": {"checks": checks, "seconds": round(m, 4), "ns_per_check": round(m / checks * 1e9),
                                 "floor_seconds": round(f, 4), "ratio_to_floor": round(m / f, 2)},
        "policy_selects_node": {"checks": 50 * 500, "ns_per_check": round(_time(node_select) / 25000 * 1e9)},
        "validate_policy_us": round(_time(validate_many) / 1000 * 1e6, 1),
        "validate_node_state_us": round(_time(validate_states) / 200 * 1e6, 1),
        "apply_defaults_us": round(_time(defaults_many) / 1000 * 1e6, 2),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
