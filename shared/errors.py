"""Error families of the runtime.

Two families, as in pydantic-ai: control-flow signals and run failures, plus domain errors a
caller is told about (:class:`DomainError`: a code, a message, details). What a domain error means
on the wire (an HTTP status, ``Allow``/``Retry-After`` headers) is decided in one place at the
edge, ``shared/web.py`` (``http_status``); nothing here knows HTTP.
"""

from __future__ import annotations

import math
from typing import Any


class AgentRuntimeError(Exception):
    """Base class of every error this package raises on purpose."""


class DomainError(AgentRuntimeError):
    """An error the caller is told about: ``{"ok": false, "error": {"code", "message", "details"?}}``.

    Subclasses say what kind of refusal it is; ``code`` says which one (``INVALID_QUERY``...)."""

    code: str = "BAD_REQUEST"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details or {}

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"ok": False, "error": body}


class InvalidInput(DomainError):
    """The request (body, query, an argument) is not acceptable as sent; ``details`` names what."""

    code = "BAD_REQUEST"


class Unauthenticated(DomainError):
    code = "UNAUTHENTICATED"


class Forbidden(DomainError):
    """The caller is authenticated but lacks the role the operation needs (``ADMIN_ONLY``). Never
    used for another user's object: that answers 404 like a missing one."""

    code = "FORBIDDEN"


class NotFound(DomainError):
    """No such object for this caller (another user's objects are not found either)."""

    code = "NOT_FOUND"


class MethodNotAllowed(DomainError):
    """The operation exists, but not with this method; ``allowed`` lists those that do."""

    code = "METHOD_NOT_ALLOWED"

    def __init__(self, method: str, allowed: tuple[str, ...] | list[str]) -> None:
        super().__init__(f"method {method} is not allowed here; use {' or '.join(allowed)}")
        self.allowed = tuple(allowed)


class Conflict(DomainError):
    """The object's state does not allow the operation now (already decided, already ended...)."""

    code = "CONFLICT"


class Gone(DomainError):
    """The object existed but can no longer be acted on (an expired approval)."""

    code = "GONE"


class Unprocessable(DomainError):
    """The request is well formed but contradicts an earlier one (an ``Idempotency-Key`` sent again
    with another request body)."""

    code = "UNPROCESSABLE"


class StoredValueInvalid(DomainError, ValueError):
    """A stored document cannot be read as its record (a value of the wrong type or out of the range
    the code reading it accepts, a missing field): a corrupt or hand-edited document, or one written
    before its field was validated. ``details.object`` names it (its path). Lists leave such a
    document out (and log it); a read of that one object answers this (409 ``STORED_VALUE_INVALID``)
    instead of an anonymous 500. A ``ValueError`` too, so code that reads stored data defensively
    (``except ValueError``) keeps doing so."""

    code = "STORED_VALUE_INVALID"


class PayloadTooLarge(DomainError):
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(DomainError):
    code = "UNSUPPORTED_MEDIA_TYPE"


class LimitExceeded(DomainError):
    """A per-user limit refused the request (docs/limits.md); nothing was created. ``retry_after_s``
    says in how many seconds a retry may succeed (for the concurrency limits: a hint only)."""

    code = "RATE_LIMITED"

    def __init__(self, message: str, *, code: str, retry_after_s: float,
                 details: dict[str, Any] | None = None) -> None:
        retry = max(1, math.ceil(retry_after_s))
        super().__init__(message, code=code, details={**(details or {}), "retryAfterS": retry})
        self.retry_after_s = retry


class Unavailable(DomainError):
    """A transient condition (e.g. store contention, a dependency down): the request may be retried
    as is."""

    code = "UNAVAILABLE"


class UpstreamFailed(DomainError):
    """A dependency (the model) refused or failed in a way a retry will not fix."""

    code = "UPSTREAM_FAILED"


class Internal(DomainError):
    """This deployment cannot serve the request (e.g. a record written by a newer version); logged."""

    code = "INTERNAL"


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


class OutcomeUnknown(ToolError):
    """A side effect was asked for and its answer was lost (the service died or went silent
    mid-call): it may or may not have happened. The action ends with outcome ``unknown`` and is
    never repeated (docs/recovery.md)."""
