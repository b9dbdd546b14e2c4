"""``integrations``: a user's connections to Gmail/Calendar (``google``) and Slack (``slack``).

- ``POST   /api/integrations/{provider}``: store the caller's tokens (encrypted) -> 200 status
- ``DELETE /api/integrations/{provider}``: forget them -> 200 status
- ``GET    /api/integrations``: whether each is connected -> 200 ``{integrations: [...]}``
- ``GET    /api/integrations/{provider}``: whether that one is -> 200 the status object (like ``POST``)
  (``POST``/``DELETE`` on the collection itself: 405, ``Allow: GET``)
- ``GET /api/integrations/mcp``, ``GET|POST|DELETE /api/integrations/mcp/{name}``,
  ``GET /api/integrations/mcp/{name}/tools``: the caller's own MCP servers and their tools
  (``shared/connectors/user_mcp.py``)
- ``GET /api/integrations/a2a``, ``GET|POST|DELETE /api/integrations/a2a/{name}``: the caller's own
  remote A2A agents (``shared/connectors/user_a2a.py``), kept like MCP servers
- ``GET /api/agent/webhooks``, ``GET|PUT|DELETE /api/agent/webhooks/{name}``,
  ``GET /api/agent/webhooks/{name}/deliveries``: the caller's webhooks (``shared/agent/webhooks.py``);
  answers never contain a secret but the one PUT stored
- ``GET /api/agent/schedules``, ``GET|PUT|DELETE /api/agent/schedules/{name}``,
  ``GET /api/agent/schedules/{name}/runs``: the caller's schedules (``shared/agent/schedules.py``)
Answers never contain a token. Routes: ``shared/routes.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import flask

from functions.common import caller
from shared.connectors import PROVIDERS, ConnectorError
from shared.connectors.integrations_api import (
    ConnectRequest,
    IntegrationRemovedResponse,
    IntegrationsResponse,
    one_status,
    provider_named,
    status_body,
)
from shared.connectors.user_a2a import UserA2aAgents
from shared.connectors.user_mcp import (
    McpServerRemovedResponse,
    McpServerRequest,
    McpServerResponse,
    McpServersResponse,
    McpServerStatusBody,
    UserEndpoints,
    UserMcpServers,
    server_name,
)
from shared.errors import Unavailable
from shared.query import params
from shared.web import json_response, parse_model, read_json_body

if TYPE_CHECKING:
    from shared.runtime import Runtime


@contextmanager
def configured() -> Iterator[None]:
    try:
        yield
    except ConnectorError as exc:  # the deployment has no usable encryption key
        raise Unavailable(str(exc), code="INTEGRATIONS_NOT_CONFIGURED") from None


def list_integrations(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    with configured():
        vault = rt.connectors().vault
        listed = IntegrationsResponse(integrations=[status_body(vault.status(uid, p)) for p in PROVIDERS])
        return json_response(listed.to_json())


def get_integration(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    provider = provider_named(path["provider"])
    with configured():
        return json_response(one_status(rt.connectors().vault.status(uid, provider)).to_json())


def disconnect_integration(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    provider = provider_named(path["provider"])
    with configured():
        removed = rt.connectors().vault.delete(uid, provider)
    return json_response(IntegrationRemovedResponse(provider=provider, removed=removed).to_json())


def connect_integration(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    provider = provider_named(path["provider"])
    with configured():
        vault = rt.connectors().vault
        body = parse_model(ConnectRequest, read_json_body(request, rt.settings.max_body_bytes))
        status = vault.put(uid, provider, body.tokens())
    return json_response(one_status(status).to_json())


# ---- a user's own endpoints: MCP servers and remote A2A agents, kept alike ----------------------
Handler = Callable[[flask.Request, Mapping[str, str]], flask.Response]


def _endpoint_routes(endpoints: Callable[[Runtime], UserEndpoints[Any]], name_of: Callable[[str], str]
                     ) -> tuple[Handler, Handler, Handler]:
    """``GET``, ``POST`` and ``DELETE /.../{name}`` of the caller's endpoints of one kind."""

    def one(status: McpServerStatusBody) -> flask.Response:
        return json_response(McpServerResponse.model_validate({**status.model_dump(), "ok": True}).to_json())

    def get(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
        rt, uid = caller(request)
        return one(endpoints(rt).status(uid, name_of(path["name"])))

    def connect(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
        rt, uid = caller(request)
        name = name_of(path["name"])
        body = parse_model(McpServerRequest, read_json_body(request, rt.settings.max_body_bytes))
        with configured():
            return one(endpoints(rt).put(uid, name, body))

    def disconnect(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
        rt, uid = caller(request)
        name = name_of(path["name"])
        return json_response(McpServerRemovedResponse(name=name, removed=endpoints(rt).delete(uid, name)).to_json())

    return get, connect, disconnect


# ---- a user's own MCP servers (/api/integrations/mcp/{name}) -----------------------------------
def _mcp_servers(rt: Runtime) -> UserMcpServers:
    return UserMcpServers(rt.store, rt.connectors().vault, allow_private=rt.settings.mcp_allow_private_urls)


get_mcp_server, connect_mcp_server, disconnect_mcp_server = _endpoint_routes(_mcp_servers, server_name)


def list_mcp_servers(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.tools.mcp_tools import deployment_servers

    rt, uid = caller(request)
    query = params(request)
    page = _mcp_servers(rt).statuses(uid, query["limit"], query.get("cursor"))
    return json_response(McpServersResponse(servers=page.items, nextCursor=page.next_cursor,
                                            deployment=deployment_servers(rt.settings)).to_json())


def list_mcp_server_tools(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    """The server's tools as the caller's runs see them (the listing cache; at most ``MCP_TIMEOUT_S``)."""
    rt, uid = caller(request)
    from shared.tools.mcp_tools import listed_tools

    return json_response(listed_tools(_mcp_servers(rt), uid, server_name(path["name"]), rt.settings).to_json())


# ---- a user's own remote A2A agents (/api/integrations/a2a/{name}) -------------------------------
def _agent_name(segment: str) -> str:
    return server_name(segment, "an A2A agent's", "INVALID_A2A_AGENT_NAME")


def _a2a_agents(rt: Runtime) -> UserA2aAgents:
    return UserA2aAgents(rt.store, rt.connectors().vault, allow_private=rt.settings.mcp_allow_private_urls)


def list_a2a_agents(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    rt, uid = caller(request)
    query = params(request)
    page = _a2a_agents(rt).statuses(uid, query["limit"], query.get("cursor"))
    return json_response(McpServersResponse(servers=page.items, nextCursor=page.next_cursor).to_json())


get_a2a_agent, connect_a2a_agent, disconnect_a2a_agent = _endpoint_routes(_a2a_agents, _agent_name)


# ---- the caller's webhooks (shared/agent/webhooks.py): this function holds the key sealing their secrets
# (imported per call: the integration routes never load the agent package)
def list_webhooks(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.webhooks import Webhooks

    rt, uid = caller(request)
    query = params(request)
    return json_response(Webhooks(rt.services).listed(uid, query["limit"], query.get("cursor")).to_json())


def get_webhook(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.webhooks import WebhookResponse, Webhooks, webhook_name

    rt, uid = caller(request)
    body = Webhooks(rt.services).get(uid, webhook_name(path["name"]))
    return json_response(WebhookResponse.model_validate(body.model_dump()).to_json())


def put_webhook(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.webhooks import WebhookRequest, Webhooks, webhook_name

    rt, uid = caller(request)
    name = webhook_name(path["name"])
    body = parse_model(WebhookRequest, read_json_body(request, rt.settings.max_body_bytes))
    with configured():
        answer = Webhooks(rt.services).put(uid, name, body)
    return json_response(answer.to_json())


def delete_webhook(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.webhooks import WebhookRemovedResponse, Webhooks, webhook_name

    rt, uid = caller(request)
    name = webhook_name(path["name"])
    return json_response(WebhookRemovedResponse(name=name, removed=Webhooks(rt.services).delete(uid, name)).to_json())


def webhook_deliveries(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.webhooks import Webhooks, webhook_name

    rt, uid = caller(request)
    query = params(request)
    log = Webhooks(rt.services).delivery_log(uid, webhook_name(path["name"]), query["limit"], query.get("cursor"))
    return json_response(log.to_json())


# ---- the caller's schedules (shared/agent/schedules.py)
def list_schedules(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.schedules import Schedules

    rt, uid = caller(request)
    query = params(request)
    return json_response(Schedules(rt.services).listed(uid, query["limit"], query.get("cursor")).to_json())


def get_schedule(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.schedules import ScheduleResponse, Schedules, schedule_name

    rt, uid = caller(request)
    body = Schedules(rt.services).get(uid, schedule_name(path["name"]))
    return json_response(ScheduleResponse.model_validate(body.model_dump()).to_json())


def put_schedule(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.schedules import ScheduleRequest, ScheduleResponse, Schedules, schedule_name

    rt, uid = caller(request)
    name = schedule_name(path["name"])
    body = parse_model(ScheduleRequest, read_json_body(request, rt.settings.max_body_bytes))
    stored = Schedules(rt.services).put(uid, name, body)
    return json_response(ScheduleResponse.model_validate(stored.model_dump()).to_json())


def delete_schedule(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.schedules import ScheduleRemovedResponse, Schedules, schedule_name

    rt, uid = caller(request)
    name = schedule_name(path["name"])
    removed = Schedules(rt.services).delete(uid, name)
    return json_response(ScheduleRemovedResponse(name=name, removed=removed).to_json())


def schedule_runs(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.schedules import Schedules, schedule_name

    rt, uid = caller(request)
    query = params(request)
    runs = Schedules(rt.services).runs(uid, schedule_name(path["name"]), query["limit"], query.get("cursor"))
    return json_response(runs.to_json())
