"""``integrations``: a user's connections to Gmail/Calendar (``google``) and Slack (``slack``).

- ``POST   /api/integrations/{provider}``: store the caller's tokens (encrypted) -> 200 status
- ``DELETE /api/integrations/{provider}``: forget them -> 200 status
- ``GET    /api/integrations``: whether each is connected -> 200 ``{integrations: [...]}``
- ``GET    /api/integrations/{provider}``: whether that one is -> 200 the status object (like ``POST``)
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
    IntegrationsResponse,
    is_collection,
    one_status,
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
        if provider is None:  # GET of the collection (anything else answered 405 above)
            listed = IntegrationsResponse(integrations=[status_body(vault.status(uid, p)) for p in PROVIDERS])
            return json_response(listed.to_json())
        if request.method == "GET":
            return json_response(one_status(vault.status(uid, provider)).to_json())
        if request.method == "DELETE":
            removed = vault.delete(uid, provider)
            return json_response(IntegrationRemovedResponse(provider=provider, removed=removed).to_json())
        body = parse_model(ConnectRequest, read_json_body(request, rt.settings.max_body_bytes))
        status = vault.put(uid, provider, body.tokens())
        return json_response(one_status(status).to_json())
    except ConnectorError as exc:  # the deployment has no usable encryption key
        raise ApiError(str(exc), code="INTEGRATIONS_NOT_CONFIGURED", status=503) from None
