"""`sriovop wait-for-config`'s logic against a plain fake client (the real API server: integration tests)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from sriovop.api.v1 import consts
from sriovop.commands import wait_for_config as wfc
from sriovop.runtime.errors import ConnectionFailed, Forbidden, Gone, NotFound, ServerError
from sriovop.runtime.kinds import POD

MARK = consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION


def pod(marked: bool, rv: str = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "dp-1", "namespace": "ops", "resourceVersion": rv}
    if marked:
        meta["annotations"] = {MARK: "true"}
    return {"metadata": meta, "spec": {"nodeName": "n1"}}


class Stream:
    def __init__(self, events: list[tuple[str, dict[str, Any]]], error: Exception | None = None) -> None:
        self.events, self.error, self.closed, self.consumed = events, error, False, 0

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for event in self.events:
            self.consumed += 1
            yield event
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closed = True


class Client:
    """Scripted answers: each call pops the next item of its list (an exception is raised)."""

    def __init__(self, *, patches: list[Any] | None = None, gets: list[Any] | None = None,
                 watches: list[Any] | None = None) -> None:
        self.patches = patches or [pod(True)]
        self.gets = gets or []
        self.watches = watches or []
        self.calls: list[str] = []
        self.watch_args: list[dict[str, Any]] = []

    @staticmethod
    def _next(items: list[Any]) -> Any:
        item = items.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def patch(self, kind: Any, name: str, patch: Any, namespace: str | None = None) -> Any:
        assert kind is POD and name == "dp-1" and namespace == "ops"
        assert patch == {"metadata": {"annotations": {MARK: "true"}}}
        self.calls.append("patch")
        return self._next(self.patches)

    def get(self, kind: Any, name: str, namespace: str | None = None) -> Any:
        self.calls.append("get")
        return self._next(self.gets)

    def watch(self, kind: Any, namespace: str | None = None, **kw: Any) -> Any:
        self.calls.append("watch")
        self.watch_args.append(kw)
        return self._next(self.watches)


def waiter(client: Client, **kw: Any) -> wfc.Waiter:
    values: dict[str, Any] = {"poll_interval": 0.001, "retry_min_delay": 0.001, "retry_max_delay": 0.002, **kw}
    return wfc.Waiter(client, "ops", "dp-1", node_name="n1", **values)


def test_marks_then_watches_until_the_mark_is_removed() -> None:
    stream = Stream([("BOOKMARK", {"metadata": {"resourceVersion": "6"}}),
                     ("MODIFIED", pod(True, "6")), ("MODIFIED", pod(False, "7"))])
    client = Client(gets=[pod(True, "5"), pod(False, "7")], watches=[stream])
    waiter(client).run()
    assert stream.consumed == 3 and stream.closed  # a bookmark (no annotations) is not "unmarked"
    assert client.calls == ["patch", "get", "watch", "get"]
    assert client.watch_args[0]["field_selector"] == {"metadata.name": "dp-1"}
    assert client.watch_args[0]["resource_version"] == "5"


def test_already_unmarked_exits_without_watching() -> None:
    client = Client(gets=[pod(False)])
    waiter(client).run()
    assert client.calls == ["patch", "get"]


def test_watch_forbidden_falls_back_to_polling_for_good() -> None:
    client = Client(gets=[pod(True), pod(True), pod(True), pod(False)], watches=[Forbidden(403, "no watch")])
    w = waiter(client)
    w.run()
    assert client.calls == ["patch", "get", "watch", "get", "get", "get"]
    assert not w.watch_allowed


@pytest.mark.parametrize("error", [Gone(410, "too old"), ConnectionFailed("reset")])
def test_a_broken_watch_is_reopened_after_a_poll(error: Exception) -> None:
    client = Client(gets=[pod(True), pod(True), pod(False)],
                    watches=[Stream([("MODIFIED", pod(True))], error=error), Stream([])])
    waiter(client).run()
    assert client.calls == ["patch", "get", "watch", "get", "watch", "get"]


def test_transient_errors_while_marking_are_retried() -> None:
    client = Client(patches=[ConnectionFailed("refused"), ServerError(503, "unavailable"), pod(True)],
                    gets=[pod(False)])
    waiter(client).run()
    assert client.calls == ["patch", "patch", "patch", "get"]


def test_permanent_errors_give_up_after_a_few_attempts_with_a_hint() -> None:
    client = Client(patches=[Forbidden(403, "pods is forbidden")] * 10)
    with pytest.raises(wfc.WaitFailed, match=r"cannot annotate pod ops/dp-1.*needs get/patch/watch"):
        waiter(client).run()
    assert client.calls == ["patch"] * wfc.PERMANENT_ATTEMPTS


def test_the_pod_going_away_fails_the_wait() -> None:
    client = Client(gets=[pod(True), NotFound(404, "gone")], watches=[Stream([("DELETED", pod(True))])])
    with pytest.raises(wfc.WaitFailed, match="no longer exists"):
        waiter(client).run()


def test_timeout() -> None:
    client = Client(gets=[pod(True)] * 1000, watches=[Forbidden(403, "no")])
    with pytest.raises(wfc.WaitFailed, match="not removed within"):
        waiter(client, timeout=0.05, poll_interval=0.01).run()


def test_should_give_up() -> None:
    assert not wfc.should_give_up(None, 100)
    assert not wfc.should_give_up(ServerError(500, "x"), 100)
    assert not wfc.should_give_up(NotFound(404, "x"), wfc.PERMANENT_ATTEMPTS - 1)
    assert wfc.should_give_up(NotFound(404, "x"), wfc.PERMANENT_ATTEMPTS)
    assert wfc.should_give_up(ValueError("x"), 1)


@pytest.mark.parametrize(("env", "message"), [
    ({"NAMESPACE": "ops"}, "pod name: required"),
    ({"POD_NAME": "dp-1"}, "namespace: required"),
])
def test_cli_names_the_missing_field(env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("POD_NAME", "NAMESPACE", "NODE_NAME"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(wfc.command, [], env=env)
    assert result.exit_code == 2 and message in result.output


def test_cli_reports_a_missing_kubeconfig(tmp_path: Any) -> None:
    result = CliRunner().invoke(wfc.command, ["--kubeconfig", str(tmp_path / "nope")],
                                env={"POD_NAME": "dp-1", "NAMESPACE": "ops"})
    assert result.exit_code == 1 and "does not exist" in result.output
