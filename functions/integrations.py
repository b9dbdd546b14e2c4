"""``integrations``: a user's connections to Gmail/Calendar (``google``) and Slack (``slack``).

- ``POST   /api/integrations/{provider}``: store the caller's tokens (encrypted) -> 200 status
- ``DELETE /api/integrations/{provider}``: forget them -> 200 status
- ``GET    /api/integrations[/{provider}]``: whether each is connected -> 200
  (``POST``/``DELETE`` on the collection itself: 405, ``Allow: GET``)
Answers never contain a token.
"""

from __future__ import annotations

import flask

from functions.common import authenticated_uid
from shared.connectors import PROVIDERS, ConnectorError
from shared.connectors.integrations_api import (
    ConnectRequest,
    IntegrationRemovedResponse,
    IntegrationResponse,
    IntegrationsResponse,
    is_collection,
    provider_from_path,
    status_body,
)
from shared.errors import ApiError
from shared.runtime import get_runtime
from shared.web import http_endpoint, json_response, parse_model, read_json_body, require_method


@http_endpoint
def integrations(request: flask.Request) -> flask.Response:
    if is_collection(request.path):  # read-only: 405 with ``Allow: GET`` for anything else
        require_method(request, "GET")
    else:
        require_method(request, "GET", "POST", "DELETE")
    rt = get_runtime()
    uid = authenticated_uid(rt, request)
    provider = provider_from_path(request.path)
    vault = rt.connectors().vault
    try:
        if request.method == "GET":
            wanted = [provider] if provider else list(PROVIDERS)
            listed = IntegrationsResponse(integrations=[status_body(vault.status(uid, p)) for p in wanted])
            return json_response(listed.to_json())
        assert provider is not None  # POST/DELETE on the collection answered 405 above
        if request.method == "DELETE":
            removed = vault.delete(uid, provider)
            return json_response(IntegrationRemovedResponse(provider=provider, removed=removed).to_json())
        body = parse_model(ConnectRequest, read_json_body(request, rt.settings.max_body_bytes))
        status = vault.put(uid, provider, body.tokens())
        stored = IntegrationResponse.model_validate({**status_body(status).model_dump(), "ok": True})
        return json_response(stored.to_json())
    except ConnectorError as exc:  # the deployment has no usable encryption key
        raise ApiError(str(exc), code="INTEGRATIONS_NOT_CONFIGURED", status=503) from None
