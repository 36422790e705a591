"""Helpers for runtime integration tests against the real API server."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import CONFIG_MAP, NAMESPACE


def client_for(kubeconfig: Path, **overrides: Any) -> Client:
    cfg = load_config(kubeconfig)
    for k, v in overrides.items():
        setattr(cfg, k, v)
    return Client(cfg)


def new_namespace(client: Client, prefix: str = "rt") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    client.create(NAMESPACE, {"metadata": {"name": name}})
    return name


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": dict(data)}


def server_rvs(client: Client, namespace: str) -> dict[str, str]:
    return {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
            for o in client.list(CONFIG_MAP, namespace)}


def cache_rvs(objs: list[Any]) -> dict[str, str]:
    return {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
            for o in objs}
