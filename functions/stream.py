"""``stream``: POST /api/agent/run/stream -> NDJSON events of seed 001 section 4 (plus ``seq``)."""

from __future__ import annotations

from collections.abc import Mapping

import flask

from functions.common import caller, run_request
from shared.agent.run_handlers import stream_run
from shared.agent.streaming import ndjson
from shared.web import idempotency_key, ndjson_response, sse_response, wants_sse


def stream(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    body = run_request(rt, request)
    # Start (and validate, claim the thread) before the first byte, so refusals are plain 4xx JSON.
    events = stream_run(rt.agent, uid, body, idempotency_key=idempotency_key(request), sessions=lambda: rt.sessions)
    if wants_sse(request):
        return sse_response(events)
    return ndjson_response(ndjson(ev) for ev in events)
