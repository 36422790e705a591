"""A hollow daemons process's cost per NodeState event of another process's node, in process.

Each daemons process of a hollow fleet watches all NodeStates once (sriovop.hollow.fanout) and hands
each of its daemons the events of its own node. Every NodeState event therefore reaches every daemons
process: at N nodes in processes of 100, each event is handled N/100 times, so what a process spends
on an event that is not its own grows the fleet's cost per node with N. This measures that cost on
both paths of the same hub, fed the same watch lines:
- decoded: a hub that keeps every object (the line decoded, stored, matched against each daemon's
  watch);
- filtered: a hub told its daemons' node names (`NameFilter`): the line becomes a stub carrying only
  its resourceVersion, found with regular expressions.
The lines are kube-apiserver's format (compact JSON, an object's keys sorted) of NodeStates as a
hollow node's look after a rollout: 2 PFs with 8 VFs each in status, 3 managedFields entries, the host
facts annotation (JSON in a string), an owner reference, about 4.8 KB each. The hub has 100
subscribers, one per daemon. Interleaved rounds after a warm-up; figure: median CPU microseconds
(process time) per event, min and max kept.

    .venv/bin/python test/bench/hub_filter.py [--events 2000] [--rounds 7] [--quick]
"""

from __future__ import annotations

import json
import time
from typing import Any

import benchlib
from benchlib import Figure, Stat
from kubernetes import client as k8s_client

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.hollow.fanout import Hub
from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from test.support.watch_lines import watch_line

DAEMONS = 100
PFS = 2
VFS = 8


def _vf(pf: str, i: int) -> dict[str, Any]:
    return {"Vlan": 0, "deviceID": "10ed", "driver": "iavf", "mac": f"02:00:00:00:{i:02x}:01", "mtu": 1500,
            "name": f"{pf}v{i}", "pciAddress": f"0000:3b:02.{i}", "vendor": "8086", "vfID": i}


def node_state(name: str, rv: int) -> dict[str, Any]:
    pfs = [f"{name}-p{j}" for j in range(PFS)]
    facts = json.dumps({"interfaces": [{"name": pf, "numVfs": VFS} for pf in pfs], "kernelArgs": []})
    fields: dict[str, Any] = {"f:metadata": {"f:annotations": {"f:sriovnetwork.openshift.io/current-state": {}}}}
    managed: list[dict[str, Any]] = [
        {"apiVersion": "sriovnetwork.openshift.io/v1", "fieldsType": "FieldsV1", "fieldsV1": fields,
         "manager": manager, "operation": "Update", "time": "2026-12-06T10:00:00Z"}
        for manager in ("sriovop-operator", "sriovop-config-daemon", "sriovop-config-daemon-status")]
    return {
        "apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodeState",
        "metadata": {"annotations": {"sriovnetwork.openshift.io/current-state": "Idle",
                                     "sriovnetwork.openshift.io/desired-state": "Idle",
                                     "sriovop.io/host-facts": facts},
                     "creationTimestamp": "2026-12-06T10:00:00Z", "generation": 3, "managedFields": managed,
                     "name": name, "namespace": "sriov-network-operator",
                     "ownerReferences": [{"apiVersion": "sriovnetwork.openshift.io/v1", "blockOwnerDeletion": True,
                                          "controller": True, "kind": "SriovOperatorConfig", "name": "default",
                                          "uid": "7d0f"}],
                     "resourceVersion": str(rv), "uid": f"uid-{name}"},
        "spec": {"interfaces": [{"name": pf, "numVfs": VFS, "pciAddress": f"0000:3b:00.{j}",
                                 "vfGroups": [{"deviceType": "netdevice", "policyName": "bulk",
                                               "resourceName": "bulk", "vfRange": f"0-{VFS - 1}"}]}
                                for j, pf in enumerate(pfs)]},
        "status": {"syncStatus": "Succeeded", "interfaces": [
            {"Vfs": [_vf(pf, i) for i in range(VFS)], "deviceID": "158b", "driver": "i40e", "eSwitchMode": "legacy",
             "linkSpeed": "25000 Mb/s", "linkType": "ETH", "mac": f"02:aa:00:00:00:0{j}", "mtu": 1500, "name": pf,
             "numVfs": VFS, "pciAddress": f"0000:3b:00.{j}", "totalvfs": 64, "vendor": "8086"}
            for j, pf in enumerate(pfs)]},
    }


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if args.quick:
        args.events, args.rounds = 200, 2
    started = benchlib.machine()
    mine = [f"hollow-{i:05d}" for i in range(DAEMONS)]
    others = range(DAEMONS, DAEMONS + args.events)
    lines = [watch_line("MODIFIED", node_state(f"hollow-{i:05d}", 10_000 + i)) for i in others]
    cfg = k8s_client.Configuration()
    cfg.host = "https://127.0.0.1:1"  # never contacted: the hub is fed as its reflector would feed it
    client = Client(RestConfig(configuration=cfg))

    def side(names: list[str] | None) -> Any:
        def run() -> float:
            hub = Hub(client, SRIOV_NETWORK_NODE_STATE, "sriov-network-operator", None, names)
            hub.replace([], "1")
            streams = [hub.watch(("metadata", "name"), name, "1", 1800) for name in mine]
            decode = hub.name_filter or json.loads
            cpu = time.process_time()
            for line in lines:
                hub.update(decode(line)["object"])
            spent = time.process_time() - cpu
            for stream in streams:
                stream.close()
            return spent / len(lines)

        return run

    from sriovop.runtime.cache.reflector import Reflector

    Reflector.following = property(lambda self: True)  # type: ignore[method-assign,assignment]  # fed by hand
    samples = benchlib.interleave({"decoded": side(None), "filtered": side(mine)}, args.rounds)
    decoded, filtered = Stat.of(samples["decoded"]), Stat.of(samples["filtered"])
    figures = [Figure("hub_other_process_event_us", round(filtered.median * 1e6, 1), "us",
                      baseline=round(decoded.median * 1e6, 1),
                      baseline_what="the same hub keeping every object (each line decoded)",
                      note=f"CPU per event of another process's node, {DAEMONS} daemons' watches on the hub, "
                           f"{len(lines[0])}-byte lines; median of {args.rounds} interleaved rounds of "
                           f"{args.events} events")]
    details = {"line_bytes": len(lines[0]), "events": args.events, "rounds": args.rounds,
               "decoded_us": decoded.scaled(1e6, 1), "filtered_us": filtered.scaled(1e6, 1)}
    client.close()
    benchlib.emit("hub_filter", figures, details, args.out, started)


if __name__ == "__main__":
    main()
