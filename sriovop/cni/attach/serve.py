"""The attach plugin as a `sriovop cni-server` handler (registered as `sriovop-attach`).

The shim sends the pod's netns as an open descriptor; delegate plugins are separate processes, so they
get a path to it. The runtime's own CNI_NETNS is passed on when this process sees that path and it is
the very namespace that came with the request: delegates may keep the path beyond the request (the
`sriov` plugin records which namespace holds a VF and later asks whether it is still alive), and a
`/proc/<server pid>/fd/<n>` path names another namespace, or none, once the request is over. Otherwise
(the path is not visible here) they get `/proc/<server pid>/fd/<n>`, valid while the request is served.
"""

from __future__ import annotations

import os

from sriovop.cni.attach import plugin
from sriovop.cni.server import CniRequest, CniResponse, Handler, ServerOptions


def netns_path(fd: int | None, runtime_netns: str = "") -> str | None:
    if fd is None:
        return None
    if runtime_netns:
        try:
            seen, sent = os.stat(runtime_netns), os.fstat(fd)
        except OSError:
            pass
        else:
            if (seen.st_dev, seen.st_ino) == (sent.st_dev, sent.st_ino):
                return runtime_netns
    return f"/proc/{os.getpid()}/fd/{fd}"


def attach_handler(options: ServerOptions) -> Handler:
    """The options are not needed: everything node-specific is in the plugin's network config."""
    del options

    def handle(request: CniRequest) -> CniResponse:
        netns = netns_path(request.netns_fd, request.env.get("CNI_NETNS", ""))
        stdout, code = plugin.handle(request.env, request.stdin, netns)
        return CniResponse(stdout=stdout.decode() + ("\n" if stdout else ""), exit_code=code)

    return handle
