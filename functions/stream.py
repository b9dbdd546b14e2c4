"""``stream``: POST /api/agent/run/stream -> NDJSON events of seed 001 section 4 (plus ``seq``);
POST /api/agent/agui -> the AG-UI event stream of a run started or resumed from a ``RunAgentInput``
(shared/agui/, docs/ag-ui.md)."""

from __future__ import annotations

from collections.abc import Mapping

import flask

from functions.common import caller, run_request, starting_caller
from shared.agent.run_handlers import stream_run
from shared.agent.streaming import ndjson
from shared.web import (
    event_stream_response,
    idempotency_key,
    ndjson_response,
    read_json_body,
    sse_response,
    wants_sse,
)


def stream(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    with starting_caller(request) as (rt, uid, deferred):
        body = run_request(rt, request)
        # Start (and validate, claim the thread) before the first byte, so refusals are plain 4xx JSON.
        events = stream_run(rt.agent, uid, body, idempotency_key=idempotency_key(request),
                            sessions=lambda: rt.sessions, deferred=deferred)
    resp = sse_response(events) if wants_sse(request) else ndjson_response(ndjson(ev) for ev in events)
    if events.replayed:
        resp.headers["Idempotent-Replayed"] = "true"
    return resp


def agui(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agui.endpoint import agui_stream
    from shared.agui.inputs import parse_input

    rt, uid = caller(request)
    req = parse_input(read_json_body(request, rt.settings.max_body_bytes))
    # Start or decide before the first byte, so refusals are plain 4xx JSON.
    frames = agui_stream(rt, uid, req, idempotency_key=idempotency_key(request),
                         last_event_id=request.headers.get("Last-Event-ID"))
    return event_stream_response(frames)
