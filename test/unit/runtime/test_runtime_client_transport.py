"""Where `Client` sends its requests: the API server's own pool with the server's path prefix, or a
forward proxy for plain HTTP, which needs absolute URLs. A plain-HTTP server on loopback records the
request lines it receives (no cluster)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes.client import Configuration

from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from sriovop.runtime.kinds import CONFIG_MAP
from test.support.loopback_http import loopback_http

LIST = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": []}


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    body = json.dumps(LIST).encode()
    with loopback_http(lambda path: (200, body)) as served:
        yield served


def _client(host: str, proxy: str | None = None) -> Client:
    cfg = Configuration(host=host)
    cfg.proxy = proxy
    return Client(RestConfig(configuration=cfg))


def test_requests_keep_the_servers_path_prefix_and_query(server: tuple[str, list[str]]) -> None:
    url, seen = server
    client = _client(url + "/k8s/clusters/c-1")
    try:
        page = client.list_page(CONFIG_MAP, "ns", limit=1, resource_version="5", resource_version_match="NotOlderThan")
        client.list_page(CONFIG_MAP, "ns", limit=1)  # the kept-alive connection, second request
    finally:
        client.close()
    assert page.resource_version == "7"
    assert seen == ["/k8s/clusters/c-1/api/v1/namespaces/ns/configmaps?resourceVersion=5&limit=1"
                    "&resourceVersionMatch=NotOlderThan",
                    "/k8s/clusters/c-1/api/v1/namespaces/ns/configmaps?limit=1"]


def test_a_plain_http_server_behind_a_forward_proxy_gets_absolute_urls(server: tuple[str, list[str]]) -> None:
    proxy, seen = server  # the recorder plays the proxy; the API server's name need not resolve
    client = _client("http://apiserver.invalid:6443", proxy=proxy)
    try:
        client.list_page(CONFIG_MAP, "ns", limit=1)
    finally:
        client.close()
    assert seen == ["http://apiserver.invalid:6443/api/v1/namespaces/ns/configmaps?limit=1"]


def test_a_closed_client_opens_a_new_pool_for_a_later_request(server: tuple[str, list[str]]) -> None:
    url, seen = server
    client = _client(url)
    client.list_page(CONFIG_MAP, "ns", limit=1)
    client.close()
    try:
        client.list_page(CONFIG_MAP, "ns", limit=1)
    finally:
        client.close()
    assert len(seen) == 2
