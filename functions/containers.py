"""``containers``: the caller's workspaces of the sandbox service (docs/workspaces.md).

- ``GET    /api/agent/containers``: the caller's live workspaces -> 200 ``{containers: [...]}``
- ``GET    /api/agent/containers/{containerId}/files[?path=]``: its files, or one file's text (read-only)
- ``DELETE /api/agent/containers/{containerId}``: destroy one -> 200; another user's or a missing one
  -> 404 ``WORKSPACE_NOT_FOUND``; 503 ``SANDBOX_NOT_CONFIGURED`` without ``SANDBOX_URL``.
Routes: ``shared/routes.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

import flask

from functions.common import caller
from shared.web import json_response


def list_containers(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.query import params
    from shared.workspaces import containers_of

    rt, uid = caller(request)
    query = params(request)
    return json_response(containers_of(rt.store, rt.settings, uid, query["limit"], query.get("cursor")).to_json())


def container_files(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.query import params
    from shared.workspaces import container_files as files_of

    rt, uid = caller(request)
    listed = files_of(rt.store, rt.settings, uid, path["containerId"], params(request).get("path"))
    return json_response(listed.to_json())


def delete_container(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.workspaces import remove_container

    rt, uid = caller(request)
    return json_response(remove_container(rt.store, rt.settings, uid, path["containerId"]).to_json())
