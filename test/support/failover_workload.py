"""The failover harness's workload: SriovNetworks created, changed and deleted all the time, and the
final check that every change reached its NetworkAttachmentDefinition.

Networks live in the operator namespace (so they carry the operator's finalizer) and put their NADs in
a separate namespace: a deletion is only complete once the operator removed the NAD, so a change lost
in a handover shows up either as a wrong config or as a NAD left behind.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION as NAD
from sriovop.api.v1.kinds import SRIOV_NETWORK
from sriovop.render.nad import render_nad
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, Conflict, NotFound


def network_spec(rng: random.Random, target: str, i: int) -> dict[str, Any]:
    return {
        "resourceName": f"res{rng.randrange(4)}", "networkNamespace": target, "vlan": rng.randrange(1, 4095),
        "spoofChk": rng.choice(["on", "off"]), "linkState": rng.choice(["enable", "auto"]),
        "ipam": f'{{"type": "host-local", "subnet": "10.{i}.{rng.randrange(256)}.0/24"}}',
    }


class Workload:
    """One thread; each step reads a random network from the server and creates, updates or deletes it."""

    def __init__(self, client: Client, namespace: str, target: str, *, names: int = 12, period: float = 0.25,
                 seed: int = 1) -> None:
        self.client = client
        self.namespace = namespace
        self.target = target
        self.names = [f"net-{i:02d}" for i in range(names)]
        self.period = period
        self.rng = random.Random(seed)
        self.counts: Counter[str] = Counter()
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="workload", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(30)

    def _run(self) -> None:
        while not self.stop_event.wait(self.period):
            try:
                self.step()
            except ApiError as exc:  # an API server restart, a conflict with the operator: try again later
                self.counts[f"error:{type(exc).__name__}"] += 1

    def step(self) -> None:
        i = self.rng.randrange(len(self.names))
        name = self.names[i]
        try:
            current = self.client.get(SRIOV_NETWORK, name, self.namespace)
        except NotFound:
            body = {"metadata": {"name": name, "namespace": self.namespace},
                    "spec": network_spec(self.rng, self.target, i)}
            try:
                self.client.create(SRIOV_NETWORK, body, self.namespace)
                self.counts["create"] += 1
            except Conflict:
                self.counts["create-conflict"] += 1
            return
        if current["metadata"].get("deletionTimestamp"):
            self.counts["skip-terminating"] += 1
            return
        if self.rng.random() < 0.25:
            self.client.delete(SRIOV_NETWORK, name, self.namespace)
            self.counts["delete"] += 1
            return
        spec = network_spec(self.rng, self.target, i)
        patch = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                 "spec": {k: spec[k] for k in self.rng.sample(sorted(spec), 2)}}
        try:
            self.client.patch(SRIOV_NETWORK, name, patch, self.namespace)
            self.counts["update"] += 1
        except Conflict:
            self.counts["update-conflict"] += 1


def mismatches(client: Client, namespace: str, target: str, resource_prefix: str) -> list[str]:
    """What the final NADs get wrong about the final networks (empty when every change arrived)."""
    return compare(client.list(SRIOV_NETWORK, namespace), client.list(NAD, target), target, resource_prefix)


def compare(network_list: list[dict[str, Any]], nad_list: list[dict[str, Any]], target: str,
            resource_prefix: str) -> list[str]:
    """The pure part of `mismatches`, also fed from `kubectl get -o json` (hack/failover.py --analyze)."""
    networks = {n["metadata"]["name"]: n for n in network_list}
    nads = {n["metadata"]["name"]: n for n in nad_list}
    problems: list[str] = []
    for name, net in sorted(networks.items()):
        if net["metadata"].get("deletionTimestamp"):
            problems.append(f"{name}: deletion not finished (finalizers {net['metadata'].get('finalizers')})")
            continue
        want = render_nad(SRIOV_NETWORK, net, resource_prefix)
        have = nads.get(name)
        if have is None:
            problems.append(f"{name}: no NAD in {target}")
        elif have.get("spec") != want["spec"] or not _has(have["metadata"].get("annotations") or {},
                                                          want["metadata"]["annotations"]):
            problems.append(f"{name}: NAD does not match the network (generation "
                            f"{net['metadata'].get('generation')})")
    for name in sorted(set(nads) - set(networks)):
        problems.append(f"{name}: NAD left behind after its network was deleted")
    return problems


def _has(actual: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(actual.get(k) == v for k, v in wanted.items())


def wait_converged(client: Client, namespace: str, target: str, resource_prefix: str,
                   timeout: float) -> tuple[list[str], float]:
    """Poll until nothing mismatches or `timeout`; returns the last problems and the time it took."""
    started = time.monotonic()
    problems: list[str] = ["not checked"]
    while True:
        try:
            problems = mismatches(client, namespace, target, resource_prefix)
        except ApiError as exc:
            problems = [f"cannot read: {exc}"]
        if not problems or time.monotonic() - started > timeout:
            return problems, time.monotonic() - started
        time.sleep(0.5)
