"""``admin``: the admin API for the backend (issue 35; shared/admin.py).

- ``GET   /api/admin/users/{uid}``: the user's trust level, profile (mail allowlist) and own limits
- ``PATCH /api/admin/users/{uid}``: change them (audited)
Only the admin principal (``ADMIN_SERVICE_ACCOUNTS`` or ``ADMIN_UIDS``; make dev's ``dev-admin:<name>``);
anyone else 403 ``ADMIN_ONLY``.
Routes: ``shared/routes.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import flask

from shared.web import json_response, read_json_body

if TYPE_CHECKING:
    from shared.auth import Principal
    from shared.runtime import Runtime


def _principal(request: flask.Request) -> tuple[Runtime, Principal]:
    """The caller (401 without credentials), counted against the request limit."""
    from shared.runtime import get_runtime

    rt = get_runtime()
    principal = rt.authenticate(dict(request.headers.items()), dict(request.cookies.items()))
    rt.limits.admit_request(principal.uid)
    return rt, principal


def get_user(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import admin

    rt, principal = _principal(request)
    return json_response(admin.get_user(rt, principal, path["uid"]).to_json())


def patch_user(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared import admin

    rt, principal = _principal(request)
    admin.require_admin(rt, principal)  # before the body is read
    body = read_json_body(request, rt.settings.max_body_bytes)
    return json_response(admin.patch_user(rt, principal, path["uid"], body).to_json())
