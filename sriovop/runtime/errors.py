"""API errors as exception types, so callers branch on meaning rather than on HTTP status codes."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A non-2xx answer from the API server; `status` is the decoded metav1.Status when there is one."""

    code: int = 0

    def __init__(self, code: int, message: str, status: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or {}

    @property
    def reason(self) -> str:
        return str(self.status.get("reason", ""))

    @property
    def causes(self) -> list[dict[str, Any]]:
        return list((self.status.get("details") or {}).get("causes") or [])

    @property
    def resource_version_too_large(self) -> bool:
        """The server's cache had not reached the resourceVersion asked for within its wait."""
        return any(c.get("reason") == "ResourceVersionTooLarge" for c in self.causes)


class BadRequest(ApiError):
    pass


class Unauthorized(ApiError):
    pass


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    """409: a stale resourceVersion on update, or AlreadyExists on create (see `already_exists`)."""

    @property
    def already_exists(self) -> bool:
        return self.reason == "AlreadyExists"


class Gone(ApiError):
    """410: the requested resourceVersion was compacted away; a reflector must relist."""


class Invalid(ApiError):
    """422: validation failed; `causes` carries the server's field-level reasons."""

    def __str__(self) -> str:
        details = "; ".join(f"{c.get('field', '')}: {c.get('message', '')}" for c in self.causes)
        if not details or all(str(c.get("message", "")) in self.message for c in self.causes):
            return self.message
        return f"{self.message} ({details})"


class TooManyRequests(ApiError):
    pass


class ServerError(ApiError):
    pass


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    410: Gone, 422: Invalid, 429: TooManyRequests,
}


def error_for(code: int, message: str, status: dict[str, Any] | None = None) -> ApiError:
    cls = _BY_CODE.get(code) or (ServerError if code >= 500 else ApiError)
    return cls(code, message, status)


class ConnectionFailed(ApiError):
    """The request never got an HTTP answer (refused, reset, timed out); `code` is 0.

    Kept under ApiError so `except ApiError` covers every failed API call; `refused` lets a reflector
    tell "server down, back off and retry the same watch" apart from other failures.
    """

    def __init__(self, message: str, *, refused: bool = False, timeout: bool = False) -> None:
        super().__init__(0, message, None)
        self.refused = refused
        self.timeout = timeout
