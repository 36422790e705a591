"""Put YAML manifests into a cluster: resolve each document's kind, create or update it, wait for CRDs.

Used by the demo and the failover harness, which start from an empty control plane.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION, SRIOV_KINDS
from sriovop.controllers.apply import apply_object
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import Kind

_KINDS: dict[tuple[str, str], Kind] = {
    (k.api_version, k.kind): k
    for k in (*SRIOV_KINDS, NETWORK_ATTACHMENT_DEFINITION, *(v for v in vars(core).values() if isinstance(v, Kind)))
}


def kind_of(obj: Mapping[str, Any]) -> Kind:
    key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    try:
        return _KINDS[key]
    except KeyError:
        raise ValueError(f"no Kind known for apiVersion {key[0]!r} kind {key[1]!r}") from None


def load_documents(paths: Iterable[Path]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def apply_documents(client: Client, docs: Iterable[Mapping[str, Any]]) -> list[str]:
    """Create or update each document in order; returns `Kind/name: created|updated|unchanged` lines."""
    results = []
    for doc in docs:
        kind = kind_of(doc)
        outcome = apply_object(client, kind, doc)
        results.append(f"{kind.kind}/{doc['metadata']['name']}: {outcome}")
    return results


def wait_crds_established(client: Client, names: Iterable[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            crd = client.get(core.CUSTOM_RESOURCE_DEFINITION, name)
            conditions = (crd.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} was not Established within {timeout:.0f}s: {conditions}")
            time.sleep(0.1)


def install_crds(client: Client, crd_dir: Path) -> list[str]:
    docs = [d for d in load_documents(sorted(crd_dir.glob("*.yaml"))) if d.get("kind") == "CustomResourceDefinition"]
    apply_documents(client, docs)
    names = [d["metadata"]["name"] for d in docs]
    wait_crds_established(client, names)
    return names
