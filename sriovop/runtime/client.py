"""A JSON-dict Kubernetes client on the official client's transport.

The official client contributes kubeconfig/auth/TLS and its urllib3 pool; requests, paging, watch
streaming and decoding are ours, with the stdlib `json`, so no object ever becomes a model class.
Objects returned by reads are plain mutable dicts owned by the caller; watch streams can decode into
frozen objects for the cache (see objects.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import quote, urlencode

import structlog
import urllib3
from urllib3.exceptions import (
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from sriovop.runtime.config import RestConfig
from sriovop.runtime.errors import ApiError, ConnectionFailed, error_for
from sriovop.runtime.incluster import InClusterConfiguration
from sriovop.runtime.jsonstream import decode_list
from sriovop.runtime.kinds import Kind

log = structlog.get_logger(__name__)

JSON = dict[str, Any]
Selector = str | Mapping[str, str] | None
PatchType = Literal["merge", "json", "strategic", "apply"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
DEFAULT_PAGE_SIZE = 500


@runtime_checkable
class Reader(Protocol):
    """What a controller reads through: the cache (`CachedReader`) or the server (`Client`)."""

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]: ...

    def list(
        self, kind: Kind, namespace: str | None = None, label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> list[Any]: ...


def selector_string(selector: Selector) -> str | None:
    """`{"a": "b", "c": "d"}` → `a=b,c=d`; strings pass through (they may use set-based syntax)."""
    if selector is None:
        return None
    if isinstance(selector, str):
        return selector or None
    return ",".join(f"{k}={v}" for k, v in selector.items()) or None


class ListPage:
    """One page of a LIST: items, the collection's resourceVersion, the continue token and, when the
    server says so, how many items follow this page (`remainingItemCount`: absent on a last page and
    on lists with a label or field selector)."""

    __slots__ = ("continue_", "items", "remaining_item_count", "resource_version")

    def __init__(self, items: list[Any], resource_version: str, continue_: str,
                 remaining_item_count: int | None = None) -> None:
        self.items = items
        self.resource_version = resource_version
        self.continue_ = continue_
        self.remaining_item_count = remaining_item_count

    def total(self) -> int | None:
        """The number of items in the whole collection, for a first page; None when the server did not
        say (a selector was used)."""
        if not self.continue_:
            return len(self.items)
        return None if self.remaining_item_count is None else len(self.items) + self.remaining_item_count


def _remaining(meta: JSON) -> int | None:
    count = meta.get("remainingItemCount")
    return count if isinstance(count, int) else None


class WatchStream:
    """An open watch: iterate for `(type, object)`; `close()` from any thread unblocks the reader.

    ERROR events are raised as the ApiError built from their Status (410 → Gone), so a consumer
    cannot mistake them for objects. A read timeout raises ConnectionFailed(timeout=True).
    """

    def __init__(self, response: urllib3.BaseHTTPResponse, decode: Callable[[bytes], Any]) -> None:
        self._resp = response
        self._decode = decode
        self._closed = False
        self.events = 0

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        buf = b""
        decode = self._decode
        try:
            for chunk in self._resp.stream(65536, decode_content=True):
                if b"\n" not in chunk:
                    buf += chunk
                    continue
                lines = (buf + chunk).split(b"\n")
                buf = lines.pop()
                for line in lines:
                    if not line.strip():
                        continue
                    ev = decode(line)
                    etype = ev["type"]
                    obj = ev["object"]
                    if etype == "ERROR":
                        raise _status_error(obj)
                    self.events += 1
                    yield etype, obj
        except (ReadTimeoutError, Urllib3Timeout) as exc:
            if self._closed:
                return
            raise ConnectionFailed(f"watch stream read timed out: {exc}", timeout=True) from exc
        except (ProtocolError, HTTPError, OSError, ValueError) as exc:
            if self._closed:
                return
            raise ConnectionFailed(f"watch stream broke: {exc}") from exc
        finally:
            self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            shutdown = getattr(self._resp, "shutdown", None)
            if shutdown is not None:
                shutdown()
            self._resp.close()
        except Exception:  # closing a broken socket may fail in many ways; nothing to do about it
            pass


def _status_error(status: Mapping[str, Any]) -> ApiError:
    code = int(status.get("code") or 500)
    return error_for(code, str(status.get("message") or status.get("reason") or "error"), dict(status))


class Client:
    """Thread-safe JSON client. Every method raises sriovop.runtime.errors types.

    ```
    c = Client(load_config(None))
    cm = c.get(CONFIG_MAP, "x", "ns")            # plain dict, yours to change
    cm["data"]["k"] = "v"; c.update(CONFIG_MAP, cm)
    c.patch(NODE, "n1", {"metadata": {"labels": {"a": "b"}}})          # merge patch
    c.patch(KIND, "x", obj, namespace="ns", patch_type="apply", field_manager="me")
    ```
    """

    def __init__(self, config: RestConfig) -> None:
        self.config = config
        cfg = config.configuration
        if config.max_connections:
            cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 0, config.max_connections)
        self._pool: urllib3.PoolManager = _pool_manager(cfg)
        self._host = config.host
        self._route = _route(self._pool, self._host)
        self._timeout = urllib3.Timeout(connect=config.connect_timeout, read=config.read_timeout)
        self._lock = threading.Lock()

    # -- transport -----------------------------------------------------------------------------

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        cfg = self.config.configuration
        headers = {"Accept": "application/json", "User-Agent": self.config.user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        settings: dict[str, Any] = dict(cfg.auth_settings())
        for setting in settings.values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        if cfg.username and cfg.password and "authorization" not in headers:
            headers["Authorization"] = str(cfg.get_basic_auth_token())
        return headers

    def request(
        self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
        content_type: str = "application/json", stream: bool = False, read_timeout: float | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """One HTTP request; non-2xx answers raise the mapped ApiError with the server's Status."""
        target = path
        if query:
            q = {k: ("true" if v is True else "false" if v is False else v)
                 for k, v in query.items() if v is not None and v != ""}
            if q:
                target += "?" + urlencode(q)
        payload = None
        if body is not None:
            payload = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        timeout = self._timeout if read_timeout is None else urllib3.Timeout(
            connect=self.config.connect_timeout, read=read_timeout)
        try:
            opener, base = self._route
            resp = opener.urlopen(
                method, base + target, body=payload,
                headers=self._headers(content_type if payload is not None else None),
                timeout=timeout, retries=False, preload_content=not stream, redirect=False,
            )
        except NewConnectionError as exc:
            raise ConnectionFailed(f"{method} {path}: cannot connect: {exc}",
                                   refused="refused" in str(exc).lower()) from exc
        except (ReadTimeoutError, Urllib3Timeout) as exc:
            raise ConnectionFailed(f"{method} {path}: timed out: {exc}", timeout=True) from exc
        except MaxRetryError as exc:
            raise ConnectionFailed(f"{method} {path}: {exc.reason}",
                                   refused="refused" in str(exc.reason).lower()) from exc
        except (ProtocolError, HTTPError, OSError) as exc:
            raise ConnectionFailed(f"{method} {path}: connection failed: {exc}") from exc
        if not 200 <= resp.status < 300:
            data = resp.data if not stream else resp.read()
            if stream:
                resp.release_conn()
            raise self._error(resp.status, data, method, path)
        return resp

    @staticmethod
    def _error(code: int, data: bytes, method: str, path: str) -> ApiError:
        status: dict[str, Any] | None = None
        try:
            decoded = json.loads(data) if data else None
            if isinstance(decoded, dict) and decoded.get("kind") == "Status":
                status = decoded
        except ValueError:
            pass
        message = str(status.get("message")) if status and status.get("message") else (
            data[:500].decode("utf-8", "replace") or f"HTTP {code}")
        return error_for(code, f"{method} {path}: {message}", status)

    def _json(self, method: str, path: str, **kw: Any) -> Any:
        resp = self.request(method, path, **kw)
        data = resp.data
        return json.loads(data) if data else None

    # -- reads ---------------------------------------------------------------------------------

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> JSON:
        _check_name(name)
        return self._json("GET", kind.object_path(name, namespace))

    def list_page(
        self, kind: Kind, namespace: str | None = None, *, label_selector: Selector = None,
        field_selector: Selector = None, resource_version: str | None = None, limit: int | None = None,
        continue_: str | None = None, decode: Callable[[bytes], Any] = json.loads,
        read_timeout: float | None = None, item_transform: Callable[[JSON], Any] | None = None,
        resource_version_match: str | None = None,
    ) -> ListPage:
        """One LIST request; the reflector's building block. Items get kind/apiVersion filled in.

        `resource_version_match` ("NotOlderThan" or "Exact") says how the server reads
        `resource_version` (Kubernetes' semantics for get and list).

        With `item_transform`, items are decoded one at a time and transformed at once (see
        jsonstream.py): the way to list many objects into a cache without a memory peak.
        """
        query = {
            "labelSelector": selector_string(label_selector),
            "fieldSelector": selector_string(field_selector),
            "resourceVersion": resource_version, "limit": limit or None, "continue": continue_ or None,
            "resourceVersionMatch": resource_version_match,
        }
        resp = self.request("GET", kind.collection_path(namespace), query=query, read_timeout=read_timeout)
        if item_transform is not None:
            kind_name, api_version = kind.kind, kind.api_version
            transform = item_transform

            def typed(item: JSON) -> Any:
                if "kind" not in item:
                    item["kind"] = kind_name
                    item["apiVersion"] = api_version
                return transform(item)

            top, streamed = decode_list(resp.data, typed)
            meta = top.get("metadata") or {}
            return ListPage(streamed, str(meta.get("resourceVersion") or ""), str(meta.get("continue") or ""),
                            _remaining(meta))
        body = decode(resp.data)
        meta = body.get("metadata") or {}
        items = body.get("items") or []
        if items and (items[0].get("kind") != kind.kind or items[0].get("apiVersion") != kind.api_version):
            if type(items[0]) is dict:  # freshly decoded and ours: set the type in place
                for item in items:
                    item["kind"] = kind.kind
                    item["apiVersion"] = kind.api_version
            else:
                items = [_with_type(item, kind) for item in items]
        return ListPage(items, str(meta.get("resourceVersion") or ""), str(meta.get("continue") or ""),
                        _remaining(meta))

    def list(
        self, kind: Kind, namespace: str | None = None, label_selector: Selector = None,
        field_selector: Selector = None, *, page_size: int = DEFAULT_PAGE_SIZE,
    ) -> list[JSON]:
        """Every matching object, following continue tokens (pages of `page_size`)."""
        out: list[JSON] = []
        cont: str | None = None
        while True:
            page = self.list_page(kind, namespace, label_selector=label_selector,
                                  field_selector=field_selector, limit=page_size, continue_=cont)
            out.extend(page.items)
            if not page.continue_:
                return out
            cont = page.continue_

    def watch(
        self, kind: Kind, namespace: str | None = None, *, resource_version: str | None = None,
        label_selector: Selector = None, field_selector: Selector = None, timeout_seconds: int | None = None,
        allow_bookmarks: bool = True, read_timeout: float | None = None,
        decode: Callable[[bytes], Any] = json.loads,
    ) -> WatchStream:
        """Open a watch; the caller iterates and must close it (iteration end closes it too)."""
        query = {
            "watch": True, "resourceVersion": resource_version, "allowWatchBookmarks": allow_bookmarks,
            "timeoutSeconds": timeout_seconds, "labelSelector": selector_string(label_selector),
            "fieldSelector": selector_string(field_selector),
        }
        resp = self.request(
            "GET", kind.collection_path(namespace), query=query, stream=True,
            read_timeout=read_timeout if read_timeout is not None else self.config.watch_read_timeout,
        )
        return WatchStream(resp, decode)

    # -- writes --------------------------------------------------------------------------------

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None,
               *, dry_run: bool = False, field_manager: str | None = None) -> JSON:
        ns = namespace or _meta(obj).get("namespace")
        body = _with_type(obj, kind)
        query = {"dryRun": "All" if dry_run else None, "fieldManager": field_manager}
        return self._json("POST", kind.collection_path(ns if kind.namespaced else None),
                          body=body, query=query)

    def update(self, kind: Kind, obj: Mapping[str, Any], *, field_manager: str | None = None) -> JSON:
        """PUT the whole object; its metadata.resourceVersion makes this a compare-and-swap (409)."""
        return self._put(kind, obj, "", field_manager)

    def update_status(self, kind: Kind, obj: Mapping[str, Any], *, field_manager: str | None = None) -> JSON:
        return self._put(kind, obj, "/status", field_manager)

    def _put(self, kind: Kind, obj: Mapping[str, Any], suffix: str, field_manager: str | None) -> JSON:
        meta = _meta(obj)
        name = meta.get("name")
        if not name:
            raise ValueError(f"cannot update {kind.kind}: metadata.name is empty")
        path = kind.object_path(name, meta.get("namespace")) + suffix
        return self._json("PUT", path, body=_with_type(obj, kind),
                          query={"fieldManager": field_manager})

    def patch(
        self, kind: Kind, name: str, patch: Any, namespace: str | None = None, *,
        patch_type: PatchType = "merge", field_manager: str | None = None, subresource: str | None = None,
        force: bool | None = None,
    ) -> JSON:
        """merge (RFC 7386), json (RFC 6902 list of ops), strategic (core kinds only) or apply (SSA).

        Server-side apply needs a field manager and defaults to force=True, as controllers do.
        """
        _check_name(name)
        if patch_type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"patch_type {patch_type!r} is not one of {sorted(PATCH_CONTENT_TYPES)}")
        if patch_type == "apply":
            if not field_manager:
                raise ValueError("patch_type 'apply' needs field_manager (server-side apply owner name)")
            if force is None:
                force = True
            if isinstance(patch, Mapping):
                patch = _with_type(patch, kind)
        path = kind.object_path(name, namespace) + (f"/{quote(subresource)}" if subresource else "")
        query = {"fieldManager": field_manager, "force": force if patch_type == "apply" else None}
        return self._json("PATCH", path, body=patch,
                          content_type=PATCH_CONTENT_TYPES[patch_type], query=query)

    def delete(
        self, kind: Kind, name: str, namespace: str | None = None, *, propagation_policy: str | None = None,
        grace_period_seconds: int | None = None, preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> JSON | None:
        """DELETE; returns the server's answer (the object, or a Status). NotFound is raised."""
        _check_name(name)
        opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            opts["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            opts["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            opts["preconditions"] = dict(preconditions)
        if dry_run:
            opts["dryRun"] = ["All"]
        return self._json("DELETE", kind.object_path(name, namespace), body=opts)

    def close(self) -> None:
        self._route = (self._pool, self._host)  # the pool closes with the others: a later request gets a new one
        self._pool.clear()


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise ValueError("object has no metadata")
    return meta


def _check_name(name: str) -> None:
    if not name or "/" in name:
        raise ValueError(f"object name {name!r} is empty or contains '/'")


def _with_type(obj: Any, kind: Kind) -> Any:
    """List items and user-built bodies may lack kind/apiVersion; the cache and SSA want them set."""
    if obj.get("kind") == kind.kind and obj.get("apiVersion") == kind.api_version:
        return obj
    d = dict(obj)
    d["kind"] = kind.kind
    d["apiVersion"] = kind.api_version
    return type(obj)(d) if type(obj) is not dict and isinstance(obj, dict) else d


class UncachedReader:
    """A Reader that always asks the server (controller-runtime's APIReader)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]:
        return self._client.get(kind, name, namespace)

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Selector = None,
             field_selector: Selector = None) -> list[Any]:
        return self._client.list(kind, namespace, label_selector, field_selector)


class DelegatingClient:
    """Reads from a cache, writes to the server (controller-runtime's default client).

    Kinds in `disable_cache_for` are always read from the server (controller-runtime's DisableFor),
    e.g. for counting that must see fresh data. Cached reads return shared read-only objects.
    """

    def __init__(self, client: Client, cache: Reader, disable_cache_for: Iterable[Kind] = ()) -> None:
        self.server = client
        self.cache = cache
        self.disable_cache_for = frozenset(disable_cache_for)
        self.create = client.create
        self.update = client.update
        self.update_status = client.update_status
        self.patch = client.patch
        self.delete = client.delete

    def _reader(self, kind: Kind) -> Reader:
        return UncachedReader(self.server) if kind in self.disable_cache_for else self.cache

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]:
        return self._reader(kind).get(kind, name, namespace)

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Selector = None,
             field_selector: Selector = None) -> list[Any]:
        return self._reader(kind).list(kind, namespace, label_selector, field_selector)


Route = tuple[urllib3.PoolManager | urllib3.HTTPConnectionPool, str]


def _route(manager: urllib3.PoolManager, host: str) -> Route:
    """What sends a request and what precedes its path: the manager's connection pool for the API
    server and the server's path prefix. A client talks to one host, and the manager's URL parsing and
    pool lookup per request cost about 50 us of the 330 us of CPU a one-item LIST takes
    (`client_request_cpu_us_one_item_list` in test/bench/runtime_informer.py). The manager itself and
    the whole URL where only it can send the request: a forward proxy for plain HTTP wants absolute URLs.
    One tuple, so a request racing `close()` never pairs one route's sender with the other's base."""
    url = urllib3.util.parse_url(host)
    if isinstance(manager, urllib3.ProxyManager) and url.scheme == "http":
        return manager, host
    return manager.connection_from_url(host), url.path or ""


def _pool_manager(cfg: Any) -> urllib3.PoolManager:
    """The in-cluster configuration builds its own pool; a kubeconfig's goes through the official
    client's (proxies, client certificates, TLS server names), imported only on that path."""
    if isinstance(cfg, InClusterConfiguration):
        return cfg.pool_manager()
    from kubernetes.client import rest as k8s_rest

    pool: urllib3.PoolManager = k8s_rest.RESTClientObject(cfg).pool_manager
    return pool
