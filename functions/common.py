"""What every route handler does first: authenticate the caller, read the request contract."""

from __future__ import annotations

from typing import TYPE_CHECKING

import flask

from shared.web import parse_model, read_json_body

if TYPE_CHECKING:
    from shared.api import RunRequest
    from shared.runtime import Runtime


def authenticated_uid(rt: Runtime, request: flask.Request) -> str:
    """The caller's uid (401 without valid credentials), counted against the per-user request limit
    (429 ``RATE_LIMITED``, docs/limits.md) before anything else of the request is read; a GET or
    HEAD is counted without a store write."""
    uid = rt.authenticate(dict(request.headers.items()), dict(request.cookies.items())).uid
    rt.limits.admit_request(uid, read=request.method in ("GET", "HEAD"))
    return uid


def caller(request: flask.Request) -> tuple[Runtime, str]:
    """The runtime and the authenticated caller's uid (:func:`authenticated_uid`)."""
    from shared.runtime import get_runtime

    rt = get_runtime()
    return rt, authenticated_uid(rt, request)


def run_request(rt: Runtime, request: flask.Request) -> RunRequest:
    from shared.api import RunRequest

    return parse_model(RunRequest, read_json_body(request, rt.settings.max_body_bytes))
