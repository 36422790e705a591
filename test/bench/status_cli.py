"""`sriovop status` on a large cluster: the whole command as a user runs it, against the reads it cannot avoid.

A generated cluster (`clustergen`: N Nodes with varied labels, N NodeStates with 2-8 PFs of mixed
vendors and their status, one SriovNetworkPoolConfig over every node) in a private kube-apiserver.
Three sides, each a fresh process of the repository's interpreter, interleaved (ABCABC...), median of
the rounds:
- `sriovop status -o json`: every node, and the pools;
- `sriovop status --summary -o json`: the pools only (the same reads and the same view, less output);
- the floor: a fresh process that makes the same requests through the same client (one GET of the
  supported-NIC ConfigMap, three LISTs) and decodes them, and nothing else. What `status` adds over it
  is its view (pools, drift, phases) and its output.
Why this baseline: a status that reads the cluster cannot read less than every NodeState, Node and
pool once; a Node GET per NodeState, as `status` did before, is N more requests.

    .venv/bin/python test/bench/status_cli.py [--nodes 5000] [--rounds 5] [--quick]
"""

from __future__ import annotations

import subprocess
import sys
import time

import benchlib
import clustergen
import seed
from benchlib import Figure, Stat

from sriovop.api.v1 import kinds
from sriovop.devcluster import ControlPlane
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config

#: The floor's process: the requests `sriovop status` makes (the supported-NIC ConfigMap for the models'
#: names, then the three LISTs), through the same client, decoded.
FLOOR = """
import sys
from sriovop.api.v1 import consts, kinds
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
client = Client(load_config(sys.argv[1]))
client.get(core.CONFIG_MAP, consts.SUPPORTED_NIC_IDS_CONFIGMAP, sys.argv[2])
for kind, ns in ((kinds.SRIOV_NETWORK_NODE_STATE, sys.argv[2]), (core.NODE, None),
                 (kinds.SRIOV_NETWORK_POOL_CONFIG, sys.argv[2])):
    client.list(kind, ns)
client.close()
"""


def run(args: list[str]) -> float:
    """Wall seconds of one fresh process; fails on a non-zero exit."""
    start = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=benchlib.REPO, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{args[:4]} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return wall


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n, rounds = (200, 3) if args.quick else (args.nodes, args.rounds)
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # stdout is the JSON
    started = benchlib.machine()
    ns = clustergen.NS
    with ControlPlane() as cp:
        client = Client(load_config(str(cp.kubeconfig)))
        seed.base(client, cp.kubeconfig, ns)
        seed.nodes(client, clustergen.Cluster(n))
        client.create(kinds.SRIOV_NETWORK_POOL_CONFIG, {
            "metadata": {"name": "all", "namespace": ns},
            "spec": {"maxUnavailable": "10%", "nodeSelector": {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "Exists"}]}}})
        client.close()
        kc = str(cp.kubeconfig)
        status = [sys.executable, "-m", "sriovop.cli", "status", "--kubeconfig", kc, "-n", ns, "-o", "json"]
        samples = benchlib.interleave({
            "status": lambda: run(status),
            "summary": lambda: run([*status, "--summary"]),
            "floor": lambda: run([sys.executable, "-c", FLOOR, kc, ns]),
        }, rounds)
    stats = {side: Stat.of(values) for side, values in samples.items()}
    floor = round(stats["floor"].median, 3)
    floor_what = "the same GET and three LISTs, decoded, in a fresh process (the floor)"
    figures = [
        Figure(f"status_cli_seconds_{n}_nodes", round(stats["status"].median, 3), "s", baseline=floor,
               baseline_what=floor_what,
               note=f"sriovop status -o json, median of {rounds}: {stats['status'].scaled(1)}"),
        Figure(f"status_summary_cli_seconds_{n}_nodes", round(stats["summary"].median, 3), "s", baseline=floor,
               baseline_what=floor_what,
               note=f"sriovop status --summary -o json, median of {rounds}: {stats['summary'].scaled(1)}"),
    ]
    benchlib.emit("status_cli", figures, {"nodes": n, "rounds": rounds, "samples": samples,
                                          "floor": stats["floor"].scaled(1)},
                  args.out, started)


if __name__ == "__main__":
    main()
