"""The `ib-sriov` plugin (upstream ib-sriov-cni's configuration): an InfiniBand VF for a pod.

Fields: `deviceID` (required), `pkey` (kept for ib-kubernetes, validated), `link_state`, the GUID from
`runtimeConfig.infinibandGUID` (Multus's `infiniband-guid` with the capability) or `args.cni.guid`,
`rdmaIsolation`, `ibKubernetesEnabled`, `vfioPciMode`, `ipam`. The GUID is set on the VF as node and
port GUID through its PF, the rest is the `sriov` flow (move, IPAM, cache, restore) with its state
under `<state>/ib-sriov`. Proven on the simulated host only (no InfiniBand hardware here).
"""

from __future__ import annotations

import json
import re
from typing import Any

from sriovop.cni.context import Node, default_kernel
from sriovop.cni.errors import INVALID_CONFIG, INVALID_ENV, CniError, config_error
from sriovop.cni.netconf import parse
from sriovop.cni.plugin import _version_of, version_response
from sriovop.cni.server import CniRequest, CniResponse, Handler, ServerOptions
from sriovop.cni.vfkernel import VfKernel

PLUGIN = "ib-sriov"
_GUID = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){7}$")
_PKEY = re.compile(r"^0x[0-9a-fA-F]{1,4}$")


def parse_guid(raw: dict[str, Any]) -> str | None:
    """runtimeConfig.infinibandGUID wins over args.cni.guid (upstream's order)."""
    runtime = raw.get("runtimeConfig")
    guid = runtime.get("infinibandGUID") if isinstance(runtime, dict) else None
    source = "runtimeConfig.infinibandGUID"
    if not guid:
        args = raw.get("args")
        cni = args.get("cni") if isinstance(args, dict) else None
        guid = cni.get("guid") if isinstance(cni, dict) else None
        source = "args.cni.guid"
    if not guid:
        return None
    if not isinstance(guid, str) or not _GUID.match(guid):
        raise config_error(source, f"{guid!r} is not a GUID (xx:xx:xx:xx:xx:xx:xx:xx)")
    return guid.lower()


def validate_ib(raw: dict[str, Any]) -> None:
    pkey = raw.get("pkey")
    if pkey not in (None, "") and (not isinstance(pkey, str) or not _PKEY.match(pkey)):
        raise config_error("pkey", f"{pkey!r} is not a partition key (0x0000-0xffff)")
    for flag in ("rdmaIsolation", "ibKubernetesEnabled", "vfioPciMode"):
        if flag in raw and not isinstance(raw[flag], bool):
            raise config_error(flag, f"{raw[flag]!r} is not true or false")
    for unsupported in ("vlan", "mac", "spoofchk", "trust", "min_tx_rate", "max_tx_rate"):
        if unsupported in raw:
            raise CniError(INVALID_CONFIG, f"invalid {unsupported}", f"{unsupported}: not an ib-sriov setting")


class IbSriovPlugin:
    def __init__(self, node: Node) -> None:
        self.node = node

    def __call__(self, req: CniRequest) -> CniResponse:
        from sriovop.cni.add import cmd_add
        from sriovop.cni.delete import cmd_del

        try:
            if req.command == "VERSION":
                return version_response()
            if req.command == "ADD":
                conf = parse(req.stdin, req.env)
                validate_ib(conf.raw)
                guid = parse_guid(conf.raw)
                return CniResponse(stdout=json.dumps(cmd_add(self.node, req, conf, plugin=PLUGIN, guid=guid)) + "\n")
            if req.command == "DEL":
                warnings = cmd_del(self.node, req, plugin=PLUGIN)
                return CniResponse(stderr="".join(f"warning: {w}\n" for w in warnings))
            if req.command == "CHECK":
                conf = parse(req.stdin, req.env)
                validate_ib(conf.raw)
                return CniResponse()
            raise CniError(INVALID_ENV, "unknown CNI_COMMAND", f"CNI_COMMAND: {req.command!r}")
        except CniError as err:
            return CniResponse.error(err, _version_of(req.stdin))


def ib_sriov_handler(options: ServerOptions, kernel: VfKernel | None = None) -> Handler:
    return IbSriovPlugin(Node(root=options.host_root, kernel=kernel or default_kernel(options),
                              state_dir=options.state_dir, netns_root=options.netns_root,
                              cni_path_prefix=options.cni_path_prefix))
