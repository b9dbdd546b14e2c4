"""``data``: the caller's own data (issue 35; shared/user_data.py).

- ``GET    /api/agent/threads?limit=&cursor=``: the caller's threads, newest first
- ``GET    /api/agent/threads/{threadId}?limit=&cursor=``: its messages (newest first) and their runs
- ``DELETE /api/agent/threads/{threadId}``: the thread, its messages and runs (409 while one runs)
- ``GET    /api/agent/memories?limit=&cursor=``, ``DELETE /api/agent/memories/{memoryId}``
- ``POST   /api/agent/me/export``: every document of the caller as one JSON document
- ``DELETE /api/agent/me``: erase every document of the caller (the usage ledger anonymised)
Routes: ``shared/routes.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import flask

from functions.common import caller
from shared.query import params
from shared.web import json_response

if TYPE_CHECKING:
    from shared.runtime import Runtime


def _page(request: flask.Request) -> tuple[Runtime, str, int, str | None]:
    """The caller and the page asked for (``limit``, ``cursor``)."""
    rt, uid = caller(request)
    query = params(request)
    return rt, uid, query["limit"], query.get("cursor")


def list_threads(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import user_data

    return json_response(user_data.list_threads(*_page(request)).to_json())


def get_thread(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import user_data

    rt, uid, limit, cursor = _page(request)
    return json_response(user_data.thread_view(rt, uid, path["threadId"], limit, cursor).to_json())


def delete_thread(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import user_data

    rt, uid = caller(request)
    return json_response(user_data.delete_thread(rt, uid, path["threadId"]).to_json())


def list_memories(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import user_data

    return json_response(user_data.list_memories(*_page(request)).to_json())


def delete_memory(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import user_data

    rt, uid = caller(request)
    return json_response(user_data.delete_memory(rt, uid, path["memoryId"]).to_json())


def export_me(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import user_data

    rt, uid = caller(request)
    return json_response(user_data.export(rt, uid).to_json())


def erase_me(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import user_data

    rt, uid = caller(request)
    return json_response(user_data.erase(rt, uid).to_json())
