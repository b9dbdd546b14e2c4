"""Error families of the runtime.

Two families, as in pydantic-ai: control-flow signals and run failures, plus API
errors that the HTTP edge renders as 4xx JSON.
"""

from __future__ import annotations

import math
from typing import Any


class AgentRuntimeError(Exception):
    """Base class of every error this package raises on purpose."""


class ApiError(AgentRuntimeError):
    """An error the HTTP edge renders as ``{"ok": false, "error": {...}}`` with ``status``."""

    status: int = 400
    code: str = "BAD_REQUEST"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None,
                 details: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.details = details or {}
        self.headers = dict(headers or {})
        """Response headers the status calls for (``Allow`` on a 405, ``Retry-After`` on a 503...)."""

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"ok": False, "error": body}


class BadRequest(ApiError):
    status = 400
    code = "BAD_REQUEST"


class Unauthenticated(ApiError):
    status = 401
    code = "UNAUTHENTICATED"


class NotFound(ApiError):
    status = 404
    code = "NOT_FOUND"


class MethodNotAllowed(ApiError):
    """405 with the ``Allow`` header listing the methods the route answers (RFC 9110 15.5.6)."""

    status = 405
    code = "METHOD_NOT_ALLOWED"

    def __init__(self, method: str, allowed: tuple[str, ...] | list[str]) -> None:
        super().__init__(f"method {method} is not allowed here; use {' or '.join(allowed)}",
                         headers={"Allow": ", ".join(allowed)})


class Conflict(ApiError):
    status = 409
    code = "CONFLICT"


class Gone(ApiError):
    status = 410
    code = "GONE"


class PayloadTooLarge(ApiError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(ApiError):
    status = 415
    code = "UNSUPPORTED_MEDIA_TYPE"


class TooManyRequests(ApiError):
    """429: a per-user limit refused the request (docs/limits.md); nothing was created. ``Retry-After``
    says in how many seconds a retry may succeed (for the concurrency limits: a hint only)."""

    status = 429
    code = "RATE_LIMITED"

    def __init__(self, message: str, *, code: str, retry_after_s: float,
                 details: dict[str, Any] | None = None) -> None:
        retry = max(1, math.ceil(retry_after_s))
        super().__init__(message, code=code, details={**(details or {}), "retryAfterS": retry},
                         headers={"Retry-After": str(retry)})
        self.retry_after_s = retry


class Unavailable(ApiError):
    """A transient condition (e.g. store contention): the request may be retried as is."""

    status = 503
    code = "UNAVAILABLE"


class StoreError(AgentRuntimeError):
    """The store failed (I/O, unavailable). Store errors live here, not with the store, so the
    HTTP edge can handle them without importing the state package."""


class PreconditionFailed(StoreError):
    """A conditional write lost: the document changed, exists already, or does not exist.

    The whole batch or transaction it belonged to was not applied.
    """


class TransactionContention(StoreError):
    """A transaction could not commit after its retries because of concurrent writers."""


class ConfigurationError(AgentRuntimeError):
    """The runtime was configured wrongly (a user of the library made a mistake)."""


class ModelError(AgentRuntimeError):
    """The model call failed (after retries). ``retryable`` tells whether a retry could help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class ModelTimeout(ModelError):
    """The model did not answer within the configured timeout."""


class ToolError(AgentRuntimeError):
    """A tool failed in a way the model should be told about (user-facing message)."""
