"""``sessions``: plan sessions (seed 004) over HTTP. Every route is owner-only (404 otherwise).

- ``POST /api/agent/sessions`` -> 201 the proposed plan (200 ``ok: false`` when planning failed)
- ``POST /api/agent/sessions/{id}/refine`` -> 200 the revised plan
- ``POST /api/agent/sessions/{id}/confirm`` -> 202 ``executing``
- ``POST /api/agent/sessions/{id}/cancel`` (no body, ``{}`` or ``{"reason"}``) -> 202
- ``GET  /api/agent/sessions/{id}`` -> the session
- ``GET  /api/agent/sessions/{id}/events?after=N&follow=1`` -> NDJSON
"""

from __future__ import annotations

import re

import flask

from functions.common import authenticated_uid
from shared.errors import NotFound
from shared.http_errors import shown_path
from shared.query import bool_arg, int_arg
from shared.runtime import get_runtime
from shared.web import http_endpoint, json_response, ndjson_response, read_json_body, require_method

_PATH = re.compile(r"/api/agent/sessions(?:/(?P<id>[A-Za-z0-9_-]{1,128})"
                   r"(?:/(?P<verb>refine|confirm|cancel|events))?)?/?")
"""Matched with ``fullmatch``: ``$`` would also accept a trailing newline."""


@http_endpoint
def sessions(request: flask.Request) -> flask.Response:
    m = _PATH.fullmatch(request.path)
    if m is None:
        raise NotFound(f"no route for {request.method} {shown_path(request.path)}", code="ROUTE_NOT_FOUND")
    session_id, verb = m.group("id"), m.group("verb")
    if session_id is None:
        require_method(request, "GET", "POST")
    else:
        require_method(request, "GET" if verb in (None, "events") else "POST")
    rt = get_runtime()
    uid = authenticated_uid(rt, request)
    from shared.plans import api

    if session_id is None and request.method == "GET":
        return json_response(api.list_sessions(rt, uid, request.args).to_json())
    if session_id is None:
        body = read_json_body(request, rt.settings.max_body_bytes)
        created = api.create(rt, uid, body)
        return json_response(created.to_json(), status=201 if created.ok else 200)
    if verb is None:
        return json_response(api.view(rt, uid, session_id).to_json())
    if verb == "events":
        after = int_arg(request.args, "after", default=0)
        follow = bool_arg(request.args, "follow")
        return ndjson_response(api.events(rt, uid, session_id, after, follow=follow))
    # ``cancel``'s body is optional; read through the stream like every other body (``request.data``
    # would consume it first, so a JSON body then read as empty).
    body = read_json_body(request, rt.settings.max_body_bytes, optional=verb == "cancel")
    if verb == "refine":
        return json_response(api.refine(rt, uid, session_id, body).to_json())
    if verb == "confirm":
        return json_response(api.confirm(rt, uid, session_id, body).to_json(), status=202)
    return json_response(api.cancel(rt, uid, session_id, body).to_json(), status=202)


__all__ = ["sessions"]
