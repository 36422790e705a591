"""kube-controller-manager for a cluster with nodes.

It is what turns Deployments into pods, keeps PodDisruptionBudget status, marks unreachable nodes and
evicts their pods, collects garbage, creates each namespace's `default` ServiceAccount and the
`kube-root-ca.crt` ConfigMap pods mount, and maintains EndpointSlices. It signs legacy token Secrets with
the control plane's service-account key (bound pod tokens are signed by kube-apiserver with the same
key). One replica, so no leader election.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from sriovop.devcluster import process


def spawn(binary: Path, kubeconfig: Path, pki: Path, log_path: Path) -> subprocess.Popen[bytes]:
    return process.spawn(
        [str(binary), f"--kubeconfig={kubeconfig}",
         f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
         "--authentication-skip-lookup=true",  # no front-proxy (requestheader) CA to look up here
         "--bind-address=127.0.0.1", f"--secure-port={process.free_port()}",
         f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
         "--use-service-account-credentials=true", "--controllers=*", "--leader-elect=false",
         "--node-monitor-grace-period=40s", "--profiling=false"],
        log_path,
    )
