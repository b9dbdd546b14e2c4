"""``integrations``: a user's connections to Gmail/Calendar (``google``) and Slack (``slack``).

- ``POST   /api/integrations/{provider}``: store the caller's tokens (encrypted) -> 200 status
- ``DELETE /api/integrations/{provider}``: forget them -> 200 status
- ``GET    /api/integrations[/{provider}]``: whether each is connected -> 200
  (``POST``/``DELETE`` on the collection itself: 405, ``Allow: GET``)
Answers never contain a token. Routes: ``shared/routes.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import flask

from functions.common import caller
from shared.connectors import PROVIDERS, ConnectorError, CredentialVault
from shared.connectors.credentials import Provider
from shared.connectors.integrations_api import (
    ConnectRequest,
    IntegrationRemovedResponse,
    IntegrationResponse,
    IntegrationsResponse,
    provider_named,
    status_body,
)
from shared.errors import Unavailable
from shared.web import json_response, parse_model, read_json_body


@contextmanager
def _configured() -> Iterator[None]:
    try:
        yield
    except ConnectorError as exc:  # the deployment has no usable encryption key
        raise Unavailable(str(exc), code="INTEGRATIONS_NOT_CONFIGURED") from None


def _statuses(vault: CredentialVault, uid: str, wanted: list[Provider]) -> flask.Response:
    listed = IntegrationsResponse(integrations=[status_body(vault.status(uid, p)) for p in wanted])
    return json_response(listed.to_json())


def list_integrations(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    with _configured():
        return _statuses(rt.connectors().vault, uid, list(PROVIDERS))


def get_integration(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    provider = provider_named(path["provider"])
    with _configured():
        return _statuses(rt.connectors().vault, uid, [provider])


def disconnect_integration(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    provider = provider_named(path["provider"])
    with _configured():
        removed = rt.connectors().vault.delete(uid, provider)
    return json_response(IntegrationRemovedResponse(provider=provider, removed=removed).to_json())


def connect_integration(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    provider = provider_named(path["provider"])
    with _configured():
        vault = rt.connectors().vault
        body = parse_model(ConnectRequest, read_json_body(request, rt.settings.max_body_bytes))
        status = vault.put(uid, provider, body.tokens())
    stored = IntegrationResponse.model_validate({**status_body(status).model_dump(), "ok": True})
    return json_response(stored.to_json())
