"""sriovop: an SR-IOV network operator for Kubernetes, API-compatible with sriovnetwork.openshift.io/v1."""

import os

__version__ = "0.1.0"

# grpcio (1.85) runs fork handlers on every fork() of a process that has loaded it: they pause gRPC's
# own threads first, and can wait forever when a channel is in use, which hangs the fork itself.
# pyroute2 forks to open a socket in another network namespace, and the processes that talk to the
# kubelet's gRPC APIs (device plugin, cni-server, metrics exporter, tests) may do that. No forked child
# of ours uses gRPC, so the handlers buy nothing. grpcio reads the switch when it is first imported:
# here, before any module of this package can import it.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
