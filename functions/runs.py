"""``runs``: GET /api/agent/runs?limit=N (the caller's runs, newest first), GET /api/agent/runs/{runId},
GET /api/agent/runs/{runId}/events?after=N[&follow=1] and the approvals inbox,
GET /api/agent/approvals?status=pending|decided|all&limit=N (shared/approvals_inbox.py).

Reads only: the run record needs the store, the runs repository and the usage ledger (each model
call); the events route loads the streaming helpers on its first request. Neither loads the tools,
connectors or a model SDK.
"""

from __future__ import annotations

import re

import flask

from functions.common import authenticated_uid
from shared.errors import NotFound
from shared.http_errors import shown_path
from shared.query import bool_arg, int_arg
from shared.runtime import get_runtime
from shared.web import http_endpoint, json_response, ndjson_response, require_method

_LIST = re.compile(r"/api/agent/runs/?")
_INBOX = re.compile(r"/api/agent/approvals/?")
_PATH = re.compile(r"/api/agent/runs/(?P<run_id>[A-Za-z0-9_-]{1,128})(?P<events>/events)?/?")
"""Both matched with ``fullmatch``: ``$`` would also accept a trailing newline (``/runs/run_x%0A``)."""


@http_endpoint
def runs(request: flask.Request) -> flask.Response:
    if _INBOX.fullmatch(request.path):
        require_method(request, "GET")
        from shared.approvals_inbox import inbox, parse_query

        rt = get_runtime()
        uid = authenticated_uid(rt, request)
        status, limit = parse_query(request.args)
        return json_response(inbox(rt.runs, uid, status, limit).to_json())
    if _LIST.fullmatch(request.path):
        require_method(request, "GET")
        from shared.runs_list import parse_limit, runs_list

        rt = get_runtime()
        uid = authenticated_uid(rt, request)
        return json_response(runs_list(rt.runs.list_runs_for(uid, parse_limit(request.args)), rt.runs).to_json())
    m = _PATH.fullmatch(request.path)
    if m is None:  # before the method: a path that is no route is a 404 whatever the method
        raise NotFound(f"no route for {request.method} {shown_path(request.path)}", code="ROUTE_NOT_FOUND")
    require_method(request, "GET")
    rt = get_runtime()
    uid = authenticated_uid(rt, request)
    snap = rt.runs.get_run_for(uid, m.group("run_id"))
    if not m.group("events"):
        from shared.usage.views import run_view

        return json_response(run_view(snap.run, rt.usage.for_unit(uid, snap.run.run_id)).to_json())
    from shared.agent.streaming import ndjson, replay_events

    after = int_arg(request.args, "after", default=0)
    follow = bool_arg(request.args, "follow")
    events = replay_events(rt.runs, snap.run.run_id, after, follow=follow)
    return ndjson_response(ndjson(ev) for ev in events)
