"""NAD configs and the default-network pick (host: files under tmp_path only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sriovop.cni.attach import config, netconf
from sriovop.cni.attach.netconf import NetConfError
from sriovop.cni.errors import CniError


def test_master_is_the_alphabetically_first_other_conf(tmp_path: Path) -> None:
    (tmp_path / "00-sriovop-attach.conflist").write_text("{}")
    (tmp_path / "20-b.conf").write_text(json.dumps({"cniVersion": "0.4.0", "name": "b", "type": "ptp"}))
    (tmp_path / "10-a.conflist").write_text(json.dumps({"cniVersion": "1.0.0", "name": "a",
                                                          "plugins": [{"type": "bridge"}]}))
    (tmp_path / "05-ignored.json").write_text("{}")
    assert netconf.master_file(tmp_path, config.CONF_FILE).name == "10-a.conflist"
    conf = config.parse({"confDir": str(tmp_path)})
    assert conf.default_network().name == "a" and conf.default_network().is_list
    (tmp_path / "10-a.conflist").unlink()
    (tmp_path / "20-b.conf").unlink()
    with pytest.raises(CniError, match="no default network"):
        conf.default_network()


@pytest.mark.parametrize(("config_text", "field"), [
    ('{"cniVersion": "1.0.0", "name": "x", "plugins": []}', "plugins"),
    ('{"cniVersion": "1.0.0", "name": "x", "plugins": [{"type": "a"}, {"mode": "b"}]}', "plugins[1].type"),
    ('{"cniVersion": "1.0.0", "name": "x", "plugins": [{"type": "a", "capabilities": []}]}',
     "plugins[0].capabilities"),
    ('{"cniVersion": "1.0.0", "name": "x"}', "type"),
    ('{"cniVersion": 1, "type": "a"}', "cniVersion"),
    ('{"type": "../bin/sh"}', "(root).type"),
    ("[1]", "(root)"),
])
def test_invalid_configs_name_the_field(config_text: str, field: str) -> None:
    with pytest.raises(NetConfError) as err:
        netconf.parse(config_text)
    assert err.value.field == field


def test_conf_and_conflist_keep_every_key() -> None:
    conf = netconf.parse('{"cniVersion": "0.4.0", "name": "n", "type": "sriov", "vlan": 5, "ipam": {"type": "x"}}')
    assert not conf.is_list and conf.to_json()["vlan"] == 5
    listed = netconf.parse({"cniVersion": "1.0.0", "name": "l", "plugins": [{"type": "a", "k": [1]}, {"type": "b"}]})
    assert listed.to_json() == {"cniVersion": "1.0.0", "name": "l", "plugins": [{"type": "a", "k": [1]}, {"type": "b"}]}
