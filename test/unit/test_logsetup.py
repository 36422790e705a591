"""Every log line goes through structlog: our loggers and the standard-library loggers of dependencies.

Host: none (the process's own logging configuration, written to a captured stderr).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from sriovop.logsetup import configure_logging, current_format, set_level


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)
    structlog.reset_defaults()


def _lines(err: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.splitlines() if line.strip()]


def test_json_throughout_for_structlog_and_library_loggers(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", "json")
    structlog.get_logger("sriovop.operator").info("reconciled", node="worker-1")
    logging.getLogger("urllib3.connectionpool").warning("Retrying (%s) after connection broken", "Retry(total=2)")
    logging.getLogger("kubernetes.client.rest").error("response body: %s", "{}")
    logging.getLogger("pyroute2.ndb").warning("netlink socket closed")
    logging.getLogger("grpc._channel").warning("channel closed")
    lines = _lines(capsys.readouterr().err)
    assert [(x["logger"], x["level"]) for x in lines] == [
        ("sriovop.operator", "info"), ("urllib3.connectionpool", "warning"), ("kubernetes.client.rest", "error"),
        ("pyroute2.ndb", "warning"), ("grpc._channel", "warning")]
    assert lines[0]["event"] == "reconciled" and lines[0]["node"] == "worker-1"
    assert lines[1]["event"] == "Retrying (Retry(total=2)) after connection broken"
    assert all("timestamp" in x for x in lines)


def test_library_info_is_dropped_and_ours_follows_the_level(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("debug", "json")
    logging.getLogger("urllib3.connectionpool").info("Resetting dropped connection")
    logging.getLogger("urllib3.connectionpool").debug("Starting new HTTPS connection")
    structlog.get_logger("sriovop.daemon").debug("step", n=1)
    logging.getLogger("sriovop.webhook").debug("stdlib logger of ours")
    assert [x["event"] for x in _lines(capsys.readouterr().err)] == ["step", "stdlib logger of ours"]
    set_level("warning")
    structlog.get_logger("sriovop.daemon").info("hidden now")
    structlog.get_logger("sriovop.daemon").warning("shown")
    assert [x["event"] for x in _lines(capsys.readouterr().err)] == ["shown"]


def test_exceptions_from_library_loggers_stay_inside_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", "json")
    try:
        raise ConnectionResetError("peer went away")
    except ConnectionResetError:
        logging.getLogger("urllib3").exception("request failed")
        structlog.get_logger("sriovop.runtime").exception("watch failed")
    err = capsys.readouterr().err
    lines = _lines(err)  # raises if a traceback line escaped the JSON
    assert len(lines) == 2
    assert all("ConnectionResetError: peer went away" in str(x["exception"]) for x in lines)


def test_console_format_is_kept_across_a_level_change(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", "console")
    assert current_format() == "console"
    set_level("debug")
    assert current_format() == "console"
    logging.getLogger("kubernetes").warning("plain library line")
    err = capsys.readouterr().err
    assert "plain library line" in err and "[warning" in err and not err.lstrip().startswith("{")


def test_reconfiguring_replaces_only_its_own_handler() -> None:
    root = logging.getLogger()
    foreign = logging.NullHandler()
    root.addHandler(foreign)
    configure_logging("info", "json")
    configure_logging("debug", "console")
    ours = [h for h in root.handlers if h.get_name() == "sriovop"]
    assert len(ours) == 1 and foreign in root.handlers


def test_unknown_level_names_the_value() -> None:
    with pytest.raises(ValueError, match="'loud' is not one of"):
        configure_logging("loud")
