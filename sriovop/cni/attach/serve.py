"""The attach plugin as a `sriovop cni-server` handler (registered as `sriovop-attach`).

The shim sends the pod's netns as an open descriptor; delegate plugins are separate processes, so they
get it as `/proc/<server pid>/fd/<n>`, a path that stays valid for as long as the request is served.
"""

from __future__ import annotations

import os

from sriovop.cni.attach import plugin
from sriovop.cni.server import CniRequest, CniResponse, Handler, ServerOptions


def netns_path(fd: int | None) -> str | None:
    return f"/proc/{os.getpid()}/fd/{fd}" if fd is not None else None


def attach_handler(options: ServerOptions) -> Handler:
    """The options are not needed: everything node-specific is in the plugin's network config."""
    del options

    def handle(request: CniRequest) -> CniResponse:
        stdout, code = plugin.handle(request.env, request.stdin, netns_path(request.netns_fd))
        return CniResponse(stdout=stdout.decode() + ("\n" if stdout else ""), exit_code=code)

    return handle
