"""``run``: POST /api/agent/run -> the non-streaming response of seed 001 section 3."""

from __future__ import annotations

from collections.abc import Mapping

import flask

from functions.common import run_request, starting_caller
from shared.agent.run_handlers import run_to_stop
from shared.web import idempotency_key, json_response


def run(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    with starting_caller(request) as (rt, uid, deferred):
        body = run_request(rt, request)
        result, replayed = run_to_stop(rt.agent, uid, body, idempotency_key=idempotency_key(request),
                                       deferred=deferred)
    headers = {"Idempotent-Replayed": "true"} if replayed else None
    return json_response(result.to_doc(), headers=headers, status=202 if result.status == "queued" else 200)
