"""``stream``: POST /api/agent/run/stream -> NDJSON events of seed 001 section 4 (plus ``seq``)."""

from __future__ import annotations

import flask

from functions.common import authenticated_uid, run_request
from shared.agent.runs_api import stream_run
from shared.agent.streaming import ndjson
from shared.runtime import get_runtime
from shared.web import http_endpoint, idempotency_key, ndjson_response, require_method, sse_response, wants_sse


@http_endpoint
def stream(request: flask.Request) -> flask.Response:
    require_method(request, "POST")
    rt = get_runtime()
    uid = authenticated_uid(rt, request)
    body = run_request(rt, request)
    # Start (and validate, claim the thread) before the first byte, so refusals are plain 4xx JSON.
    events = stream_run(rt.agent, uid, body, idempotency_key=idempotency_key(request))
    if wants_sse(request):
        return sse_response(events)
    return ndjson_response(ndjson(ev) for ev in events)
