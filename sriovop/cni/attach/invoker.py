"""Running a delegate network (conf or conflist) the way libcni does.

- ADD runs the plugins in order; each gets the list's `name` and `cniVersion`, and from the second on the
  previous plugin's result as `prevResult`. The last result is the network's result.
- DEL runs them in reverse order, each with the network's ADD result as `prevResult`, and goes on past
  nothing: the first failure is the answer (the runtime retries DEL).
- CHECK runs them in order with the ADD result.
- `runtimeConfig` carries a capability arg only when the plugin's `capabilities` map declares it true.

The plugin binary is looked up in CNI_PATH, run with the CNI_* environment and the config on stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sriovop.cni.attach.errors import DELEGATE_FAILED
from sriovop.cni.attach.netconf import NetConf
from sriovop.cni.errors import DECODE_FAILURE, CniError

PLUGIN_TIMEOUT_S = 300.0
#: what a plugin keeps from our own environment (the CNI_* variables are set per call)
_INHERITED = ("PATH", "HOME", "LANG", "TMPDIR", "SRIOVOP_CNI_SOCKET_DIR")


@dataclass(frozen=True)
class RuntimeConf:
    container_id: str
    netns: str
    ifname: str
    args: str
    cni_path: tuple[str, ...]
    capability_args: Mapping[str, Any] = field(default_factory=dict)


def find_plugin(kind: str, cni_path: tuple[str, ...]) -> Path:
    for directory in cni_path:
        candidate = Path(directory) / kind
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise CniError(DELEGATE_FAILED, f"plugin {kind!r} not found",
                   f"no executable {kind} in CNI_PATH {':'.join(cni_path)}")


def plugin_config(conf: NetConf, plugin: Mapping[str, Any], rt: RuntimeConf,
                  prev_result: Mapping[str, Any] | None) -> dict[str, Any]:
    """The stdin of one plugin call (libcni buildOneConfig + injectRuntimeConfig)."""
    out = dict(plugin)
    if conf.is_list:
        out["name"] = conf.name
        out["cniVersion"] = conf.cni_version
    if prev_result is not None:
        out["prevResult"] = dict(prev_result)
    caps = plugin.get("capabilities") or {}
    runtime = {k: v for k, v in rt.capability_args.items() if caps.get(k) is True}
    if runtime:
        out["runtimeConfig"] = runtime
    return out


def _environment(command: str, rt: RuntimeConf) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _INHERITED}
    env.update({
        "CNI_COMMAND": command, "CNI_CONTAINERID": rt.container_id, "CNI_NETNS": rt.netns,
        "CNI_IFNAME": rt.ifname, "CNI_ARGS": rt.args, "CNI_PATH": os.pathsep.join(rt.cni_path),
    })
    return env


def exec_plugin(command: str, config: Mapping[str, Any], rt: RuntimeConf) -> dict[str, Any] | None:
    """One plugin call; the decoded result on ADD, None otherwise. A failure raises CniError carrying
    the plugin's own code and message."""
    kind = str(config["type"])
    binary = find_plugin(kind, rt.cni_path)
    try:
        done = subprocess.run([str(binary)], input=json.dumps(config).encode(), env=_environment(command, rt),
                              capture_output=True, timeout=PLUGIN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise CniError(DELEGATE_FAILED, f"plugin {kind} {command} timed out",
                       f"no answer within {PLUGIN_TIMEOUT_S:.0f}s") from None
    if done.returncode != 0:
        raise _plugin_error(kind, command, done.stdout, done.stderr, done.returncode)
    if command != "ADD":
        return None
    try:
        result = json.loads(done.stdout)
    except ValueError:
        raise CniError(DECODE_FAILURE, f"plugin {kind} ADD printed no JSON result",
                       done.stdout[:300].decode("utf-8", "replace")) from None
    if not isinstance(result, dict):
        raise CniError(DECODE_FAILURE, f"plugin {kind} ADD result is not a JSON object")
    return result


def _plugin_error(kind: str, command: str, stdout: bytes, stderr: bytes, rc: int) -> CniError:
    try:
        body = json.loads(stdout)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("msg"):
        code = body["code"] if isinstance(body.get("code"), int) else DELEGATE_FAILED
        return CniError(code, f"plugin {kind} {command} failed: {body['msg']}", str(body.get("details") or ""))
    text = (stderr or stdout).decode("utf-8", "replace").strip()[-500:]
    return CniError(DELEGATE_FAILED, f"plugin {kind} {command} failed with exit code {rc}", text)


def add(conf: NetConf, rt: RuntimeConf) -> dict[str, Any]:
    result: dict[str, Any] | None = None
    for plugin in conf.plugins:
        result = exec_plugin("ADD", plugin_config(conf, plugin, rt, result), rt)
    assert result is not None  # a NetConf always has a plugin
    return result


def check(conf: NetConf, rt: RuntimeConf, prev_result: Mapping[str, Any] | None) -> None:
    for plugin in conf.plugins:
        exec_plugin("CHECK", plugin_config(conf, plugin, rt, prev_result), rt)


def delete(conf: NetConf, rt: RuntimeConf, prev_result: Mapping[str, Any] | None) -> None:
    for plugin in reversed(conf.plugins):
        exec_plugin("DEL", plugin_config(conf, plugin, rt, prev_result), rt)
