"""Issue 31: what went wrong with an MCP server is said by its class, in the API and the logs:
``MCP_AUTH_FAILED`` (a real SDK server refusing a wrong token, HTTP 401), ``MCP_UNREACHABLE`` (a
closed port), ``MCP_TIMEOUT`` (a server that accepts the connection and never answers) and
``MCP_PROTOCOL_ERROR`` (an HTTP server that is not an MCP endpoint). Tokens are validated at POST;
``GET /api/integrations/mcp`` also lists the deployment's servers, read-only, with their tools."""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.config import McpServer
from shared.connectors import mcp
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.tools.mcp_listings import LISTINGS
from tests.agent.conftest import make_settings
from tests.agent.mcp_servers import serving
from tests.agent.test_mcp_tools import HTTP_SERVER
from tests.e2e.test_openapi import KEY
from tests.emulators import free_port

ALICE = {"Authorization": "Bearer dev:alice"}
TOKEN = "s3cret-user-token"
TIMEOUT_S = 8.0  # the hung server costs this; a real one answers well within it even on a busy machine


@pytest.fixture(scope="module")
def notes_url() -> Iterator[str]:
    with serving([sys.executable, str(HTTP_SERVER), "{port}", TOKEN]) as url:
        yield url


@pytest.fixture(scope="module")
def hung_url() -> Iterator[str]:
    """A server that accepts connections and reads requests but never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                conn, _ = listener.accept()
                held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture
def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there


def runtime(store: DocStore, model: Any = None, **settings: Any) -> Runtime:
    LISTINGS.clear()
    rt = Runtime(make_settings(credentials_encryption_key=KEY, mcp_timeout_s=TIMEOUT_S, mcp_allow_private_urls=True,
                               **settings), store=store,
                 model=model or FunctionModel(lambda r: text_turn("done"), name="gemini-3-flash-preview"),
                 authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    set_runtime(rt)
    return rt


@pytest.fixture
def client(sqlite_docstore: DocStore) -> Iterator[FlaskClient]:
    runtime(sqlite_docstore)
    yield create_app().test_client()
    set_runtime(None)


def test_each_failure_has_its_class_in_the_api_and_the_logs(
        client: FlaskClient, notes_url: str, closed_url: str, hung_url: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="agent_runtime.mcp")
    cases = {"wrong": ({"url": notes_url, "accessToken": "not-the-token"}, "MCP_AUTH_FAILED", "HTTP 401"),
             "closed": ({"url": closed_url}, "MCP_UNREACHABLE", "could not be reached"),
             "hung": ({"url": hung_url}, "MCP_TIMEOUT", f"did not answer tools/list within {TIMEOUT_S:.1f} s"),
             "notmcp": ({"url": notes_url.replace("/mcp", "/nothing"), "accessToken": TOKEN},
                        "MCP_PROTOCOL_ERROR", "HTTP 404")}
    for name, (body, code, words) in cases.items():
        assert client.post(f"/api/integrations/mcp/{name}", json=body, headers=ALICE).status_code == 200
        tools = client.get(f"/api/integrations/mcp/{name}/tools", headers=ALICE).get_json()
        assert tools["available"] is False and tools["errorCode"] == code, (name, tools)
        assert tools["error"].startswith(f"{code}: MCP server {name} ") and words in tools["error"], tools
        logged = [r for r in caplog.records if getattr(r, "fields", {}).get("server") == name]
        assert logged and logged[-1].fields["code"] == code, name  # type: ignore[attr-defined]
        assert "ExceptionGroup" not in tools["error"] + caplog.text
    good = client.post("/api/integrations/mcp/good", json={"url": notes_url, "accessToken": TOKEN}, headers=ALICE)
    assert good.status_code == 200
    listed = client.get("/api/integrations/mcp/good/tools", headers=ALICE).get_json()
    assert listed["available"] is True and listed.get("errorCode") is None
    assert {t["name"] for t in listed["tools"]} == {"good_add_note", "good_list_notes"}


def test_a_call_fails_with_its_class_and_the_model_is_told_it(notes_url: str, closed_url: str) -> None:
    """``tools/call`` is classified like a listing; the tool error the model reads starts with the class."""
    wrong = McpServer(name="notes", url=notes_url, headers=(("Authorization", "Bearer wrong"),))
    with pytest.raises(mcp.McpError) as caught:
        mcp.call_tool(wrong, "list_notes", {}, timeout_s=TIMEOUT_S)
    assert caught.value.code == "MCP_AUTH_FAILED" and "check its token" in str(caught.value)
    assert not caught.value.maybe_done or caught.value.code == "MCP_AUTH_FAILED"
    with pytest.raises(mcp.McpError) as down:
        mcp.call_tool(McpServer(name="gone", url=closed_url), "list_notes", {}, timeout_s=TIMEOUT_S)
    assert down.value.code == "MCP_UNREACHABLE" and str(down.value).startswith("MCP_UNREACHABLE: MCP server gone ")


def test_tokens_are_validated_at_post(client: FlaskClient) -> None:
    for token, words in (("…", "U+2026"), ("two words", "a space"), ("x" * 4097, "4096")):
        resp = client.post("/api/integrations/mcp/notes", json={"url": "http://127.0.0.1:9/mcp", "accessToken": token},
                           headers=ALICE)
        assert resp.status_code == 400, resp.get_json()
        error = resp.get_json()["error"]
        assert error["code"] == "INVALID_REQUEST" and words in str(error), error
    assert client.get("/api/integrations/mcp", headers=ALICE).get_json()["servers"] == []


def test_the_deployments_servers_are_listed_read_only_with_their_tools(
        sqlite_docstore: DocStore, notes_url: str, closed_url: str) -> None:
    servers = (McpServer(name="team", url=notes_url + "?k=v", headers=(("Authorization", f"Bearer {TOKEN}"),),
                         tools=("list_notes",)),
               McpServer(name="down", url=closed_url))
    runtime(sqlite_docstore, mcp_servers=servers)
    try:
        got = create_app().test_client().get("/api/integrations/mcp", headers=ALICE)
    finally:
        set_runtime(None)
    body = got.get_json()
    assert got.status_code == 200 and body["servers"] == []
    team, down = body["deployment"]
    assert team["name"] == "team" and team["readOnly"] is True and team["available"] is True
    assert team["url"] == notes_url and team["transport"] == "http"  # without its query
    assert [(t["name"], t["sideEffect"]) for t in team["tools"]] == [("team_list_notes", False)]
    assert down["available"] is False and down["errorCode"] == "MCP_UNREACHABLE" and down["tools"] == []
    assert TOKEN not in got.get_data(as_text=True)
