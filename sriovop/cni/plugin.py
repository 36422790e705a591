"""The `sriov` plugin as a CNI server handler: CNI_COMMAND dispatch, VERSION, errors as CNI JSON."""

from __future__ import annotations

import json
from pathlib import Path

from sriovop.cni.context import Node, default_kernel
from sriovop.cni.errors import INVALID_ENV, CniError
from sriovop.cni.netconf import SUPPORTED_VERSIONS, load_json, parse
from sriovop.cni.server import CniRequest, CniResponse, Handler, ServerOptions
from sriovop.cni.vfkernel import VfKernel


def version_response() -> CniResponse:
    return CniResponse(stdout=json.dumps({"cniVersion": "1.0.0", "supportedVersions": list(SUPPORTED_VERSIONS)})
                       + "\n")


def _version_of(stdin: bytes) -> str:
    try:
        version = load_json(stdin).get("cniVersion")
    except CniError:
        return "1.0.0"
    return version if version in SUPPORTED_VERSIONS else "1.0.0"


class SriovPlugin:
    """ADD / DEL / CHECK / VERSION of the `sriov` plugin against one node."""

    def __init__(self, node: Node, pod_resources: Path | None = None) -> None:
        self.node = node
        #: The kubelet's pod-resources socket: when set, ADD takes only a VF the kubelet allocated to the pod.
        self.pod_resources = pod_resources
        if pod_resources is not None:
            # The ownership check's gRPC stack is imported here, at server start, not inside the first
            # ADD: on a slow node (the emulated guest) that import took the first pods' ADDs to 44 s.
            import sriovop.cni.add
            import sriovop.cni.deviceowner  # noqa: F401

    def __call__(self, req: CniRequest) -> CniResponse:
        command = req.command
        try:
            if command == "VERSION":
                return version_response()
            if command == "ADD":
                from sriovop.cni.add import cmd_add

                conf = parse(req.stdin, req.env)
                if self.pod_resources is not None:
                    from sriovop.cni.deviceowner import check_owner

                    check_owner(self.pod_resources, req.env.get("CNI_ARGS", ""), conf.device_id)
                return CniResponse(stdout=json.dumps(cmd_add(self.node, req, conf)) + "\n")
            if command == "DEL":
                from sriovop.cni.delete import cmd_del

                load_json(req.stdin)
                warnings = cmd_del(self.node, req)
                return CniResponse(stderr="".join(f"warning: {w}\n" for w in warnings))
            if command == "CHECK":
                from sriovop.cni.check import cmd_check

                cmd_check(self.node, req, parse(req.stdin, req.env))
                return CniResponse()
            raise CniError(INVALID_ENV, "unknown CNI_COMMAND", f"CNI_COMMAND: {command!r} is not ADD, DEL, CHECK "
                                                               "or VERSION")
        except CniError as err:
            return CniResponse.error(err, _version_of(req.stdin))


def sriov_handler(options: ServerOptions, kernel: VfKernel | None = None) -> Handler:
    node = Node(root=options.host_root, kernel=kernel or default_kernel(options), state_dir=options.state_dir,
                netns_root=options.netns_root, cni_path_prefix=options.cni_path_prefix)
    return SriovPlugin(node, options.pod_resources)
