"""``sessions``: plan sessions (seed 004) over HTTP. Every route is owner-only (404 otherwise).
Routes: ``shared/routes.py``.

- ``POST /api/agent/sessions`` -> 201 the proposed plan (200 ``ok: false`` when planning failed)
- ``POST /api/agent/sessions/{id}/refine`` -> 200 the revised plan
- ``POST /api/agent/sessions/{id}/confirm`` -> 202 ``executing``
- ``POST /api/agent/sessions/{id}/cancel`` (no body, ``{}`` or ``{"reason"}``) -> 202
- ``GET  /api/agent/sessions/{id}`` -> the session
- ``GET  /api/agent/sessions/{id}/events?after=N&follow=1`` -> NDJSON (SSE by ``Accept``; ``Last-Event-ID``)
"""

from __future__ import annotations

from collections.abc import Mapping

import flask

from functions.common import caller, starting_caller
from shared.ndjson import ndjson
from shared.query import params, resume_after
from shared.web import (
    SSE_RETRY_MS,
    idempotency_key,
    json_response,
    ndjson_response,
    read_json_body,
    sse_response,
    wants_sse,
)


def list_sessions(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import session_handlers as api

    rt, uid = caller(request)
    query = params(request)
    return json_response(api.list_sessions(rt, uid, query["limit"], query.get("cursor")).to_json())


def create_session(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import session_handlers as api

    with starting_caller(request) as (rt, uid, deferred):
        created, replayed = api.create(rt, uid, read_json_body(request, rt.settings.max_body_bytes),
                                       idempotency_key=idempotency_key(request), deferred=deferred)
    return json_response(created.to_json(), status=201 if created.ok else 200,
                         headers={"Idempotent-Replayed": "true"} if replayed else None)


def get_session(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import session_handlers as api

    rt, uid = caller(request)
    return json_response(api.view(rt, uid, path["sessionId"]).to_json())


def session_events(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.session_follow import follow_session

    rt, uid = caller(request)
    events = follow_session(rt, uid, path["sessionId"], resume_after(request), follow=params(request)["follow"])
    if wants_sse(request):
        return sse_response(events, retry_ms=SSE_RETRY_MS)
    return ndjson_response(ndjson(ev) for ev in events)


def refine_session(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import session_handlers as api

    rt, uid = caller(request)
    body = read_json_body(request, rt.settings.max_body_bytes)
    return json_response(api.refine(rt, uid, path["sessionId"], body).to_json())


def confirm_session(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import session_handlers as api

    rt, uid = caller(request)
    body = read_json_body(request, rt.settings.max_body_bytes)
    return json_response(api.confirm(rt, uid, path["sessionId"], body).to_json(), status=202)


def cancel_session(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import session_handlers as api

    rt, uid = caller(request)
    # The body is optional (no body, ``{}`` or ``{"reason"}``); read through the stream like every
    # other body: ``request.data`` would consume it first, so a JSON body then read as empty.
    body = read_json_body(request, rt.settings.max_body_bytes, optional=True)
    return json_response(api.cancel(rt, uid, path["sessionId"], body).to_json(), status=202)
