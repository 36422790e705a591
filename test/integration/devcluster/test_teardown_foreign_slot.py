"""`down` of a cluster whose address slot another cluster holds now must not touch that cluster.

Cgroups, bridges and Service chains are named after the slot, and a slot is free for the next cluster
as soon as its previous owner is cleaned up, so a repeated or late `down` of the old directory would
otherwise kill the new owner's pods. Host: this machine (real cgroups and the real slot claims).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sriovop.devcluster import addressing, cgroups, teardown


def test_cleanup_leaves_a_slot_that_another_directory_holds(tmp_path: Path) -> None:
    addressing.CLAIMS_DIR.mkdir(parents=True, exist_ok=True)
    slot = next((s for s in reversed(range(addressing.SLOTS)) if addressing.claim_owner(s) is None), None)
    if slot is None:
        pytest.fail("no free address slot to run the test with")
    net = addressing.plan(slot, 1, "192.0.2.2")
    old = tmp_path / "old"
    old.mkdir()
    (old / teardown.STATE_FILE).write_text(json.dumps(net.to_json()))
    claim = addressing.CLAIMS_DIR / str(slot)
    claim.write_text(json.dumps({"dir": str(tmp_path / "new-owner"), "pid": os.getpid()}))
    name = teardown.cgroup_name(net, net.nodes[0].name)
    cgroups.create(name)
    try:
        teardown.cleanup(old)
        assert cgroups.remaining(name), "the new owner's cgroup is left alone"
        assert addressing.claim_owner(slot) == str(tmp_path / "new-owner")
        assert not (old / teardown.STATE_FILE).exists()
    finally:
        cgroups.remove(name)
        claim.unlink(missing_ok=True)
