"""What every route handler does first: authenticate the caller, read the request contract."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import flask

from shared.web import parse_model, read_json_body

if TYPE_CHECKING:
    from shared.api import RunRequest
    from shared.limits import DeferredRequest
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


@contextlib.contextmanager
def starting_caller(request: flask.Request) -> Iterator[tuple[Runtime, str, DeferredRequest | None]]:
    """:func:`caller` for a request that starts a run (or decides an approval): its count in the
    user's counter document is left to the run's creating commit (the decision's transaction)
    (``DeferredRequest``, issue 33: two round trips less before the first model call, and in an
    approve); a request whose start wrote none is counted on the way out (then a 429 replaces its
    answer, unless it failed anyway: its own error stands)."""
    from shared.runtime import get_runtime

    rt = get_runtime()
    uid = rt.authenticate(dict(request.headers.items()), dict(request.cookies.items())).uid
    deferred = rt.limits.admit_request(uid, deferred=True)
    try:
        yield rt, uid, deferred
    except BaseException:
        if deferred is not None:
            with contextlib.suppress(Exception):
                deferred.settle()
        raise
    if deferred is not None:
        deferred.settle()


def run_request(rt: Runtime, request: flask.Request) -> RunRequest:
    from shared.api import RunRequest

    return parse_model(RunRequest, read_json_body(request, rt.settings.max_body_bytes))
