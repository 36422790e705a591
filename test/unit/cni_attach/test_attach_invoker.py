"""The delegate invoker's libcni semantics, against fake plugin executables (no netns: the fake plugins
only record their calls; host: this machine's process table)."""

from __future__ import annotations

import pytest

from sriovop.cni.attach import invoker, netconf
from sriovop.cni.attach.invoker import RuntimeConf
from sriovop.cni.errors import CniError
from test.support.cni_fakeplugin import PluginDir


def _rt(plugins: PluginDir, **caps: object) -> RuntimeConf:
    return RuntimeConf(container_id="c1", netns="/proc/1/ns/net", ifname="net1", args="IgnoreUnknown=true;A=b",
                       cni_path=("/nonexistent", str(plugins.bin)), capability_args=caps)


def _conflist(plugins: PluginDir, **extra: object) -> netconf.NetConf:
    return netconf.parse({"cniVersion": "1.0.0", "name": "chain", "plugins": [
        {"type": "first", "log": str(plugins.log), "address": "10.0.0.5/24",
         "capabilities": {"mac": True, "ips": False}, **extra},
        {"type": "second", "log": str(plugins.log), "capabilities": {"deviceID": True}},
    ]})


def test_add_runs_plugins_in_order_chaining_prev_result(plugins: PluginDir) -> None:
    plugins.install("first", "second")
    result = invoker.add(_conflist(plugins), _rt(plugins))
    first, second = plugins.calls()
    assert [first["stdin"]["type"], second["stdin"]["type"]] == ["first", "second"]
    assert first["stdin"]["name"] == second["stdin"]["name"] == "chain"
    assert first["stdin"]["cniVersion"] == second["stdin"]["cniVersion"] == "1.0.0"
    assert "prevResult" not in first["stdin"]
    assert second["stdin"]["prevResult"]["ips"] == [{"address": "10.0.0.5/24", "interface": 0}]
    assert result["interfaces"] == [second["stdin"]["prevResult"]["interfaces"][0], result["interfaces"][1]]
    assert first["env"] == {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_NETNS": "/proc/1/ns/net",
                            "CNI_IFNAME": "net1", "CNI_ARGS": "IgnoreUnknown=true;A=b",
                            "CNI_PATH": f"/nonexistent:{plugins.bin}"}


def test_runtime_config_only_carries_declared_capabilities(plugins: PluginDir) -> None:
    plugins.install("first", "second")
    invoker.add(_conflist(plugins), _rt(plugins, mac="02:11:22:33:44:55", ips=["10.0.0.9/24"],
                                        deviceID="0000:03:02.1", bandwidth={"ingressRate": 1}))
    first, second = plugins.calls()
    assert first["stdin"]["runtimeConfig"] == {"mac": "02:11:22:33:44:55"}  # ips is declared false
    assert second["stdin"]["runtimeConfig"] == {"deviceID": "0000:03:02.1"}


def test_no_runtime_config_key_when_nothing_matches(plugins: PluginDir) -> None:
    plugins.install("first", "second")
    invoker.add(_conflist(plugins), _rt(plugins, portMappings=[{"hostPort": 1}]))
    assert all("runtimeConfig" not in c["stdin"] for c in plugins.calls())


def test_del_runs_in_reverse_with_the_add_result(plugins: PluginDir) -> None:
    plugins.install("first", "second")
    conf = _conflist(plugins)
    result = invoker.add(conf, _rt(plugins))
    invoker.delete(conf, _rt(plugins), result)
    dels = [c for c in plugins.calls() if c["command"] == "DEL"]
    assert [c["stdin"]["type"] for c in dels] == ["second", "first"]
    assert all(c["stdin"]["prevResult"] == result for c in dels)


def test_single_conf_is_passed_unchanged_without_list_keys(plugins: PluginDir) -> None:
    plugins.install("first")
    conf = netconf.parse({"cniVersion": "0.4.0", "name": "solo", "type": "first", "log": str(plugins.log),
                          "extra": {"kept": True}})
    invoker.add(conf, _rt(plugins))
    [call] = plugins.calls()
    assert call["stdin"] == {"cniVersion": "0.4.0", "name": "solo", "type": "first", "log": str(plugins.log),
                             "extra": {"kept": True}}


def test_plugin_error_keeps_its_code_and_message_and_stops_the_chain(plugins: PluginDir) -> None:
    plugins.install("first", "second")
    with pytest.raises(CniError) as err:
        invoker.add(_conflist(plugins, fail="ADD"), _rt(plugins))
    assert err.value.code == 7
    assert "plugin first ADD failed: first refuses" in err.value.msg
    assert err.value.details == "as configured"
    assert [c["stdin"]["type"] for c in plugins.calls()] == ["first"]


def test_missing_plugin_binary_names_it(plugins: PluginDir) -> None:
    plugins.install("first")
    with pytest.raises(CniError, match="plugin 'second' not found"):
        invoker.add(_conflist(plugins), _rt(plugins))
