"""Issue 21: the SSRF guard on a user's MCP server URL (``shared/connectors/url_guard.py``). By
default (``MCP_ALLOW_PRIVATE_URLS`` off, as in production) a URL whose host is or resolves to a
loopback, private, link-local (the metadata server) or reserved address is refused when it is
stored (400 ``MCP_URL_NOT_ALLOWED``) and is never connected to (a server stored earlier, or whose
name resolves elsewhere now, is refused before anything is sent). The deployment's servers
(``MCP_SERVERS``) are not checked. Against a real SDK server over HTTP on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.config import McpServer, Settings
from shared.connectors.url_guard import UrlNotAllowed, check_public_url
from shared.connectors.user_mcp import McpServerRequest, UserMcpServers
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import ConfigurationError
from shared.models.scripted import FunctionModel
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore, Query
from shared.tools.mcp_listings import LISTINGS
from tests.agent.conftest import make_settings
from tests.agent.mcp_servers import serving
from tests.agent.test_loop import start_and_drive
from tests.agent.test_mcp_tools import HTTP_SERVER
from tests.agent.test_mcp_user_servers import ALICE, Chat
from tests.e2e.test_openapi import KEY

TOKEN = "guard-token"


@pytest.fixture(scope="module")
def notes_url() -> Iterator[str]:
    with serving([sys.executable, str(HTTP_SERVER), "{port}", TOKEN]) as url:
        yield url


@pytest.fixture
def chat() -> Chat:
    return Chat()


@pytest.fixture
def rt(sqlite_docstore: DocStore, chat: Chat, notes_url: str) -> Iterator[Runtime]:
    """Production's default (private URLs refused) with a deployment server on 127.0.0.1."""
    deployment = McpServer(name="ops", url=notes_url, headers=(("Authorization", f"Bearer {TOKEN}"),))
    runtime = Runtime(make_settings(credentials_encryption_key=KEY, mcp_timeout_s=20.0, mcp_servers=(deployment,)),
                      store=sqlite_docstore, model=FunctionModel(chat, name="gemini-3-flash-preview"),
                      authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    assert runtime.settings.mcp_allow_private_urls is False
    set_runtime(runtime)
    LISTINGS.clear()
    yield runtime
    set_runtime(None)
    LISTINGS.clear()


@pytest.fixture
def client(rt: Runtime) -> FlaskClient:
    return create_app().test_client()


def test_production_refuses_private_addresses_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_ALLOW_PRIVATE_URLS", raising=False)
    assert Settings().mcp_allow_private_urls is False
    assert Settings.from_env().mcp_allow_private_urls is False
    monkeypatch.setenv("MCP_ALLOW_PRIVATE_URLS", "true")
    assert Settings.from_env().mcp_allow_private_urls is True
    monkeypatch.setenv("K_SERVICE", "integrations")  # a deployed function refuses to start with it
    with pytest.raises(ConfigurationError, match="MCP_ALLOW_PRIVATE_URLS"):
        Settings.from_env()


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8080/mcp",            # loopback
    "http://localhost/mcp",                 # a name that resolves to loopback
    "http://10.1.2.3/mcp",                  # private
    "http://192.168.0.10/mcp",
    "http://172.16.5.4:3000/mcp",
    "http://169.254.169.254/computeMetadata/v1/",  # link-local: the metadata server
    "http://[::1]/mcp",
    "http://[::ffff:127.0.0.1]/mcp",        # IPv4-mapped loopback
    "http://[fd00::1]/mcp",                 # unique local
    "http://0.0.0.0/mcp",
    "http://100.64.0.1/mcp",                # carrier-grade NAT
    "http://no-such-host.invalid/mcp",      # does not resolve
    "http://metadata.google.internal/computeMetadata/v1/",  # named internal service
    "http://intranet:8080/mcp",             # a name without a domain
])
def test_a_private_url_is_refused_when_stored(client: FlaskClient, rt: Runtime, url: str) -> None:
    resp = client.post("/api/integrations/mcp/inside", json={"url": url, "accessToken": TOKEN}, headers=ALICE)
    assert resp.status_code == 400, resp.get_json()
    error = resp.get_json()["error"]
    assert error["code"] == "MCP_URL_NOT_ALLOWED", error
    assert "host is not public" in error["message"] or "does not resolve" in error["message"], error
    assert TOKEN not in resp.get_data(as_text=True)
    assert client.get("/api/integrations/mcp", headers=ALICE).get_json()["servers"] == []
    assert rt.store.query(Query("users/alice/mcpServers")) == []


def test_a_public_address_is_accepted() -> None:
    check_public_url("https://8.8.8.8/mcp")  # an IP literal: no DNS lookup needed
    check_public_url("http://[2001:4860:4860::8888]:8443/mcp")
    with pytest.raises(UrlNotAllowed):
        check_public_url("http://192.0.2.7/mcp")  # documentation range: reserved


def test_a_stored_private_url_is_never_connected_to(client: FlaskClient, rt: Runtime, chat: Chat,
                                                    notes_url: str) -> None:
    """Stored while private URLs were allowed (or its name resolved elsewhere then): with the guard
    on, listing it and running with it refuse before connecting; the deployment's server at the
    same address is listed (MCP_SERVERS is the operator's choice)."""
    UserMcpServers(rt.store, rt.connectors().vault, allow_private=True).put(
        "alice", "notes", McpServerRequest(url=notes_url, accessToken=TOKEN))
    before = LISTINGS.listed
    tools = client.get("/api/integrations/mcp/notes/tools", headers=ALICE).get_json()
    assert tools["available"] is False and tools["tools"] == []
    assert "not reached" in tools["error"] and "loopback" in tools["error"], tools
    done, _ = start_and_drive(rt, "hi", uid="alice")
    assert done.status == "completed"
    offered = {d.name for d in chat.requests[0].tools}
    assert "ops_add_note" in offered and "notes_add_note" not in offered
    instruction = chat.requests[0].system_instruction
    assert "[UNAVAILABLE TOOLS]" in instruction and "notes" in instruction
    assert LISTINGS.listed - before == 2  # the user's (refused before connecting) and the deployment's


def test_make_dev_and_tests_may_allow_private_urls(sqlite_docstore: DocStore, notes_url: str) -> None:
    runtime = Runtime(make_settings(credentials_encryption_key=KEY, mcp_allow_private_urls=True),
                      store=sqlite_docstore, authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    set_runtime(runtime)
    try:
        client = create_app().test_client()
        resp = client.post("/api/integrations/mcp/notes", json={"url": notes_url, "accessToken": TOKEN}, headers=ALICE)
        assert resp.status_code == 200, resp.get_json()
        tools = client.get("/api/integrations/mcp/notes/tools", headers=ALICE).get_json()
        assert tools["available"] is True and [t["tool"] for t in tools["tools"]] == ["add_note", "list_notes"]
    finally:
        set_runtime(None)
