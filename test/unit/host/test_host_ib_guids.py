"""The InfiniBand GUID pool file (upstream's format): lists, ranges, PFs named by GUID, and its errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sriovop.host.ib_guids import GUID_CONFIG_FILE, GuidConfigError, GuidPool, random_guid, vf_guid


def _pool(tmp_path: Path, entries: Any, by_guid: dict[str, str] | None = None) -> GuidPool | None:
    path = tmp_path / GUID_CONFIG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries))
    return GuidPool.load(tmp_path, by_guid or {})


def test_list_range_and_pf_by_guid(tmp_path: Path) -> None:
    pool = _pool(tmp_path, [
        {"pciAddress": "0000:3b:00.0", "rangeStart": "00:00:00:00:00:00:01:00", "rangeEnd": "00:00:00:00:00:00:01:02"},
        {"pfGuid": "00:11:22:33:44:55:66:77", "guids": ["02:00:00:00:00:00:00:0a", "02:00:00:00:00:00:00:0b"]},
    ], {"00:11:22:33:44:55:66:77": "0000:3b:00.1"})
    assert pool is not None
    assert [pool.guid_for("0000:3b:00.0", i) for i in range(3)] == [
        "00:00:00:00:00:00:01:00", "00:00:00:00:00:00:01:01", "00:00:00:00:00:00:01:02"]
    assert pool.guid_for("0000:3b:00.1", 1) == "02:00:00:00:00:00:00:0b"
    with pytest.raises(GuidConfigError, match=re.escape("range of PF 0000:3b:00.0 is exhausted at VF 3")):
        pool.guid_for("0000:3b:00.0", 3)
    with pytest.raises(GuidConfigError, match=re.escape("pool of PF 0000:3b:00.1 is exhausted")):
        pool.guid_for("0000:3b:00.1", 2)
    with pytest.raises(GuidConfigError, match=re.escape("no GUID pool for PF 0000:af:00.0")):
        vf_guid(pool, "0000:af:00.0", 0)


def test_without_the_file_guids_are_random_unicast_local(tmp_path: Path) -> None:
    assert GuidPool.load(tmp_path, {}) is None
    guids = {vf_guid(None, "0000:3b:00.0", 0) for _ in range(20)}
    assert len(guids) == 20
    for guid in guids | {random_guid()}:
        first = int(guid.split(":")[0], 16)
        assert len(guid.split(":")) == 8 and first & 0x02 and not first & 0x01


@pytest.mark.parametrize(("entries", "fragment"), [
    ({"pciAddress": "x"}, "must be a JSON list"),
    (["x"], "entry 0: must be an object"),
    ([{"guids": ["00:00:00:00:00:00:00:01"]}], "needs pciAddress or pfGuid"),
    ([{"pciAddress": "a", "pfGuid": "b", "guids": ["00:00:00:00:00:00:00:01"]}], "not both"),
    ([{"pfGuid": "aa:aa:aa:aa:aa:aa:aa:aa", "guids": ["00:00:00:00:00:00:00:01"]}], "no PF has GUID"),
    ([{"pciAddress": "a"}], "needs guids or rangeStart/rangeEnd"),
    ([{"pciAddress": "a", "guids": ["00:01"], "rangeStart": "00:00:00:00:00:00:00:01"}], "not both"),
    ([{"pciAddress": "a", "rangeStart": "00:00:00:00:00:00:00:01"}], "go together"),
    ([{"pciAddress": "a", "rangeStart": "00:00:00:00:00:00:00:05", "rangeEnd": "00:00:00:00:00:00:00:01"}],
     "rangeEnd must be above rangeStart"),
    ([{"pciAddress": "a", "guids": ["zz:00:00:00:00:00:00:01"]}], "entry 0: 'zz:00:00:00:00:00:00:01' is not a GUID"),
])
def test_bad_files_name_the_entry_and_reason(tmp_path: Path, entries: Any, fragment: str) -> None:
    with pytest.raises(GuidConfigError) as info:
        _pool(tmp_path, entries)
    assert fragment in str(info.value) and GUID_CONFIG_FILE in str(info.value)
