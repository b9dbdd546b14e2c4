"""``runs``: GET /api/agent/runs?limit=N (the caller's runs, newest first), GET /api/agent/runs/{runId}
and GET /api/agent/runs/{runId}/events?after=N[&follow=1].

Reads only: the run record needs the store, the runs repository and the usage ledger (each model
call); the events route loads the streaming helpers on its first request. Neither loads the tools,
connectors or a model SDK.
"""

from __future__ import annotations

import re

import flask

from functions.common import authenticated_uid
from shared.errors import BadRequest, NotFound
from shared.http_errors import shown_path
from shared.runtime import get_runtime
from shared.web import http_endpoint, json_response, ndjson_response, require_method
from shared.wire import MAX_INT64

_LIST = re.compile(r"/api/agent/runs/?")
_PATH = re.compile(r"/api/agent/runs/(?P<run_id>[A-Za-z0-9_-]{1,128})(?P<events>/events)?/?")
"""Both matched with ``fullmatch``: ``$`` would also accept a trailing newline (``/runs/run_x%0A``)."""


def _one_arg(request: flask.Request, name: str) -> str | None:
    """The query parameter's value; given twice it is a 400 (which one would count is a guess)."""
    values = request.args.getlist(name)
    if len(values) > 1:
        raise BadRequest(f"query parameter {name} is given {len(values)} times", code="INVALID_QUERY")
    return values[0] if values else None


def _int_arg(request: flask.Request, name: str, default: int) -> int:
    """A non-negative integer in ASCII digits (``int()`` alone would also take " 5", "5_0" or
    non-ASCII digits)."""
    raw = _one_arg(request, name)
    if raw is None:
        return default
    if raw.startswith("-") and raw[1:].isascii() and raw[1:].isdigit():
        raise BadRequest(f"query parameter {name} must be >= 0", code="INVALID_QUERY")
    if not (raw.isascii() and raw.isdigit()):
        raise BadRequest(f"query parameter {name} must be an integer", code="INVALID_QUERY")
    value = int(raw)
    if value > MAX_INT64:  # beyond any integer the stores keep: the document says so too
        raise BadRequest(f"query parameter {name} must be <= {MAX_INT64}", code="INVALID_QUERY")
    return value


def _bool_arg(request: flask.Request, name: str) -> bool:
    """A boolean query parameter: ``true``/``1`` or ``false``/``0`` (absent: false); anything else is
    a 400 rather than a silent false (``follow=yes`` used to mean true and ``follow=null`` false)."""
    raw = _one_arg(request, name)
    if raw is None:
        return False
    value = raw.lower()
    if value not in ("true", "1", "false", "0"):
        raise BadRequest(f"query parameter {name} must be true or false", code="INVALID_QUERY")
    return value in ("true", "1")


@http_endpoint
def runs(request: flask.Request) -> flask.Response:
    if _LIST.fullmatch(request.path):
        require_method(request, "GET")
        from shared.runs_list import parse_limit, runs_list

        rt = get_runtime()
        uid = authenticated_uid(rt, request)
        return json_response(runs_list(rt.runs.list_runs_for(uid, parse_limit(request.args.get("limit")))).to_json())
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

    after = _int_arg(request, "after", 0)
    follow = _bool_arg(request, "follow")
    events = replay_events(rt.runs, snap.run.run_id, after, follow=follow)
    return ndjson_response(ndjson(ev) for ev in events)
