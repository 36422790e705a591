"""A process of ours that talks gRPC can fork (pyroute2 does, to open sockets in other namespaces).

grpcio's fork handlers pause its threads before every fork() and can wait forever while a channel is
busy: the churn test once hung in fork() that way. `import sriovop` turns them off. The child here is a
fresh interpreter (no host needed) with a gRPC server and three threads calling it, forking 200 times.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent("""
    import os, sys, threading
    from concurrent import futures
    import sriovop  # first, as every entry point of ours does
    import grpc
    from sriovop.kubelet import podresources_v1_pb2 as pb, podresources_v1_pb2_grpc as pbg

    class Lister(pbg.PodResourcesListerServicer):
        def List(self, request, context):
            return pb.ListPodResourcesResponse()

    address = "unix://" + sys.argv[1]
    server = grpc.server(futures.ThreadPoolExecutor(4))
    pbg.add_PodResourcesListerServicer_to_server(Lister(), server)
    server.add_insecure_port(address)
    server.start()
    calls = [0]
    def call():
        while True:
            with grpc.insecure_channel(address) as channel:
                pbg.PodResourcesListerStub(channel).List(pb.ListPodResourcesRequest(), timeout=30)
            calls[0] += 1
    for _ in range(3):
        threading.Thread(target=call, daemon=True).start()
    while calls[0] < 3:
        threading.Event().wait(0.01)
    for _ in range(200):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    print("forked 200 times while", calls[0], "calls ran", flush=True)
    os._exit(0)
""")


def test_forking_beside_busy_grpc_channels_runs_no_grpc_fork_handler(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "pr.sock")], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "forked 200 times" in done.stdout
    # With grpcio's handlers on, each fork beside a busy channel logs this line (or hangs).
    assert "fork() handlers" not in done.stderr, done.stderr[-3000:]
