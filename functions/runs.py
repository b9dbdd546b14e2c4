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
from shared.query import params, resume_after
from shared.web import SSE_RETRY_MS, json_response, ndjson_response, sse_response, wants_sse


def list_runs(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.runs_list import runs_list

    rt, uid = caller(request)
    query = params(request)
    page = rt.runs.page_runs_for(uid, query["limit"], query.get("cursor"))
    return json_response(runs_list(page.items, rt.runs, page.next_cursor).to_json())


def list_approvals(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.approvals_inbox import inbox

    rt, uid = caller(request)
    query = params(request)
    return json_response(inbox(rt.runs, uid, query["status"], query["limit"], query.get("cursor")).to_json())


def get_run(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.usage.views import run_view

    rt, uid = caller(request)
    snap = rt.runs.get_run_for(uid, path["runId"])
    return json_response(run_view(snap.run, rt.usage.for_unit(uid, snap.run.run_id)).to_json())


def run_events(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.streaming import ndjson, replay_events

    rt, uid = caller(request)
    snap = rt.runs.get_run_for(uid, path["runId"])
    query = params(request)
    events = replay_events(rt.runs, snap.run.run_id, resume_after(request), follow=query["follow"],
                           until_end=query["until"] == "end", max_wait_s=rt.settings.follow_max_wait_s,
                           heartbeat_s=rt.settings.heartbeat_s, sessions=lambda: rt.sessions)
    if wants_sse(request):
        return sse_response(events, retry_ms=SSE_RETRY_MS)
    return ndjson_response(ndjson(ev) for ev in events)


def delete_run(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    """``DELETE /api/agent/runs/{runId}``: an ended run and what belongs to it (409 ``RUN_ACTIVE``
    otherwise; shared/user_data.py)."""
    from shared import user_data

    rt, uid = caller(request)
    return json_response(user_data.delete_run(rt, uid, path["runId"]).to_json())


def get_run_trace(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.trace_view import trace_of

    rt, uid = caller(request)
    return json_response(trace_of(rt.runs, rt.usage, uid, path["runId"]).to_json())
