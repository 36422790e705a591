"""Start-up reads that wait instead of crash-looping.

Upstream exits when the Node, the `supported-nic-ids` ConfigMap or SriovOperatorConfig `default` cannot
be read, and the DaemonSet restarts it with growing delays (users see CrashLoopBackOff for what is
usually an API server restart or an operator that is still starting). Here each read is retried with
capped exponential backoff, logging what is missing and what creates it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import structlog
import tenacity

from sriovop.runtime.errors import ApiError

log = structlog.get_logger(__name__)
T = TypeVar("T")


class StartupAborted(Exception):
    """The daemon was asked to stop while it was still waiting at start-up."""


def wait_for(what: str, fn: Callable[[], T], stop: threading.Event, *, max_delay: float = 30.0,
             hint: str = "") -> T:
    """Call `fn` until it returns, retrying API errors (unreachable server, 404, 403...) with backoff."""

    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning("waiting at start-up", what=what, attempt=state.attempt_number, retry_in=round(delay, 2),
                    error=str(exc), hint=hint or None)

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(ApiError),
        wait=tenacity.wait_exponential(multiplier=0.5, min=0.2, max=max_delay),
        stop=tenacity.stop_when_event_set(stop),
        sleep=lambda seconds: _sleep(stop, seconds),
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        result: Any = retrying(fn)
    except ApiError as exc:
        if stop.is_set():
            raise StartupAborted(f"stopped while waiting for {what}") from exc
        raise
    log.info("start-up read done", what=what)
    return result


def _sleep(stop: threading.Event, seconds: float) -> None:
    stop.wait(seconds)
