"""Small test-side helpers for talking to the real API server with the official client.

Tests are not the hot path, so the official client's typed APIs are fine here.
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException


def api_client(kubeconfig: Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(kubeconfig))


def create_namespace(kubeconfig: Path, name: str) -> None:
    with api_client(kubeconfig) as api:
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))


def delete_namespace(kubeconfig: Path, name: str) -> None:
    with api_client(kubeconfig) as api:
        try:
            client.CoreV1Api(api).delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise


def apply_crds(kubeconfig: Path, files: list[Path], timeout: float = 60.0) -> list[str]:
    """Create or replace every CRD in the files and wait until each is Established."""
    names: list[str] = []
    with api_client(kubeconfig) as api:
        ext = client.ApiextensionsV1Api(api)
        for path in files:
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                name = doc["metadata"]["name"]
                try:
                    ext.create_custom_resource_definition(doc)
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                    current = api.sanitize_for_serialization(ext.read_custom_resource_definition(name))
                    doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    ext.replace_custom_resource_definition(name, doc)
                names.append(name)
        deadline = time.monotonic() + timeout
        for name in names:
            while True:
                crd = api.sanitize_for_serialization(ext.read_custom_resource_definition(name))
                conditions = (crd.get("status") or {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"CRD {name} not Established within {timeout}s: {conditions}")
                time.sleep(0.1)
    return names
