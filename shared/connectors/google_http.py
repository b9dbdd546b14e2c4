"""Plumbing shared by the Google API adapters (Gmail, Calendar): build a service, execute a request.

- :func:`build_service` builds a ``googleapiclient`` service from the *static* discovery document
  shipped with the library (no network at build time), with an optional endpoint override (a local
  fake in tests) and an explicit HTTP timeout.
- :func:`execute` runs one request and maps ``HttpError`` to our errors: 401 → ``ConnectorError``
  (reconnect), 404 → a clear ``ToolError``, 409 → ``AlreadyExists`` (a client-chosen id is taken),
  429 → retried with backoff (``Retry-After`` honoured), then a clear error; 5xx are retried only
  for idempotent requests (a send that failed with a 503 may still have happened, so it is not
  repeated); no backoff starts past ``RetryPolicy.deadline``.

Only the adapters import this module, so ``googleapiclient`` loads when a connector tool runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httplib2  # type: ignore[import-untyped]
from google.auth.credentials import Credentials
from google.auth.exceptions import RefreshError
from google_auth_httplib2 import AuthorizedHttp  # type: ignore[import-untyped]
from googleapiclient.discovery import build  # type: ignore[import-untyped]
from googleapiclient.errors import HttpError  # type: ignore[import-untyped]

from shared.connectors.credentials import ConnectorError
from shared.errors import ToolError

HTTP_TIMEOUT_S = 30.0
"""Socket timeout of a request when the caller gives none (tools give their time left)."""
RETRYABLE_5XX = frozenset({500, 502, 503, 504})
MAX_RETRY_AFTER_S = 8.0


class AlreadyExists(ToolError):
    """409: a resource with the client-chosen id exists (a repeated create is recognised by it)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts per request and the backoff between them (tests pass a recording ``sleep``)."""

    max_attempts: int = 4
    first_delay_s: float = 0.5
    max_delay_s: float = 8.0
    sleep: Callable[[float], None] = time.sleep
    deadline: float | None = None
    """``time.monotonic()`` value past which no backoff or further attempt starts (the caller's time left)."""

    def allows_wait(self, wait: float) -> bool:
        return self.deadline is None or time.monotonic() + wait < self.deadline


def build_service(name: str, version: str, credentials: Credentials, *, base_url: str | None = None,
                  service_path: str = "", timeout_s: float = HTTP_TIMEOUT_S) -> Any:
    """A ``googleapiclient`` resource for ``name``/``version`` acting with ``credentials``.

    Args:
        base_url: Root URL replacing the discovery document's (e.g. ``http://127.0.0.1:8123/``).
        service_path: What the discovery document appends to its root (Gmail: ``""`` since its
            method paths start with ``gmail/v1/``; Calendar: ``"calendar/v3/"``).
        timeout_s: Socket timeout of every request.
    """
    options: dict[str, str] | None = None
    if base_url:
        options = {"api_endpoint": base_url.rstrip("/") + "/" + service_path}
    http = AuthorizedHttp(credentials, http=httplib2.Http(timeout=timeout_s))
    return build(name, version, http=http, static_discovery=True, cache_discovery=False,
                 client_options=options)


def _api_message(exc: Any) -> str:
    reason = str(getattr(exc, "reason", "") or "").strip()
    return reason[:300] or "no details"


def _retry_after(exc: Any) -> float | None:
    resp = getattr(exc, "resp", None)
    raw = resp.get("retry-after") if resp is not None else None
    try:
        return max(0.0, min(MAX_RETRY_AFTER_S, float(raw))) if raw is not None else None
    except ValueError:
        return None


def execute(request: Any, *, service: str, what: str, idempotent: bool,
            retry: RetryPolicy | None = None) -> dict[str, Any]:
    """The JSON body of ``request``, or our error.

    Args:
        service: User-facing service name ("Gmail").
        what: What the request addresses, for a 404 ("thread 'abc'").
        idempotent: Whether repeating the request is harmless (reads): only then are 5xx retried.
    """
    policy = retry or RetryPolicy()
    delay = policy.first_delay_s
    provider = "google"
    for attempt in range(1, policy.max_attempts + 1):
        try:
            body = request.execute(num_retries=0)
            return body if isinstance(body, dict) else {}
        except HttpError as exc:
            status = int(exc.status_code or 0)
            retryable = status == 429 or (idempotent and status in RETRYABLE_5XX)
            after = _retry_after(exc)
            wait = delay if after is None else after
            if retryable and attempt < policy.max_attempts and policy.allows_wait(wait):
                policy.sleep(wait)
                delay = min(delay * 2, policy.max_delay_s)
                continue
            if status == 401:
                raise ConnectorError(f"{service} rejected the stored Google credentials; ask the user to reconnect "
                                     "Google", provider=provider, reason="unauthorized") from None
            if status == 403:
                raise ToolError(f"{service} refused the request (permission denied): {_api_message(exc)}") from None
            if status == 404:
                raise ToolError(f"{service}: {what} was not found") from None
            if status == 409:
                raise AlreadyExists(f"{service}: {what} already exists") from None
            if status == 400:
                raise ToolError(f"{service} rejected the request as invalid: {_api_message(exc)}") from None
            if status == 429:
                raise ToolError(f"{service} is rate limiting requests (still limited after {attempt} attempts); "
                                "try again later") from None
            if status >= 500:
                hint = "" if idempotent else "; it may or may not have taken effect, check before retrying"
                raise ToolError(f"{service} failed with a server error ({status}){hint}") from None
            raise ToolError(f"{service} refused the request ({status}): {_api_message(exc)}") from None
        except RefreshError:  # google-auth could not refresh after a 401 (credentials outside the vault)
            raise ConnectorError(f"{service} rejected the Google credentials and they cannot be refreshed; ask the "
                                 "user to reconnect Google", provider=provider, reason="unauthorized") from None
        except (OSError, httplib2.HttpLib2Error) as exc:  # timeouts, refused connections
            if idempotent and attempt < policy.max_attempts and policy.allows_wait(delay):
                policy.sleep(delay)
                delay = min(delay * 2, policy.max_delay_s)
                continue
            hint = "" if idempotent else "; it may or may not have taken effect, check before retrying"
            raise ToolError(f"{service} could not be reached ({type(exc).__name__}){hint}") from None
    raise AssertionError("unreachable")
