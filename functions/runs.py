"""``runs``: GET /api/agent/runs?limit=N (the caller's runs, newest first), GET /api/agent/runs/{runId},
GET /api/agent/runs/{runId}/events?after=N[&follow=1] (NDJSON, or Server-Sent Events by ``Accept``;
``Last-Event-ID`` resumes) and the approvals inbox,
GET /api/agent/approvals?status=pending|decided|all&limit=N (shared/approvals_inbox.py).
Routes: ``shared/routes.py``.

Reads only: the run record needs the store, the runs repository and the usage ledger (each model
call); the events route loads the streaming helpers on its first request. Neither loads the tools,
connectors or a model SDK.
"""

from __future__ import annotations

from collections.abc import Mapping

import flask

from functions.common import caller
from shared.query import bool_arg, resume_after, until_end
from shared.web import SSE_RETRY_MS, json_response, ndjson_response, sse_response, wants_sse


def list_runs(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.runs_list import parse_limit, runs_list

    rt, uid = caller(request)
    return json_response(runs_list(rt.runs.list_runs_for(uid, parse_limit(request.args)), rt.runs).to_json())


def list_approvals(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.approvals_inbox import inbox, parse_query

    rt, uid = caller(request)
    status, limit = parse_query(request.args)
    return json_response(inbox(rt.runs, uid, status, limit).to_json())


def get_run(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.usage.views import run_view

    rt, uid = caller(request)
    snap = rt.runs.get_run_for(uid, path["runId"])
    return json_response(run_view(snap.run, rt.usage.for_unit(uid, snap.run.run_id)).to_json())


def run_events(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.streaming import ndjson, replay_events

    rt, uid = caller(request)
    snap = rt.runs.get_run_for(uid, path["runId"])
    after = resume_after(request.args, request.headers.get("Last-Event-ID"))
    follow = bool_arg(request.args, "follow")
    events = replay_events(rt.runs, snap.run.run_id, after, follow=follow, until_end=until_end(request.args),
                           max_wait_s=rt.settings.follow_max_wait_s, heartbeat_s=rt.settings.heartbeat_s,
                           sessions=lambda: rt.sessions)
    if wants_sse(request):
        return sse_response(events, retry_ms=SSE_RETRY_MS)
    return ndjson_response(ndjson(ev) for ev in events)
