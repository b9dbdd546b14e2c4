"""``/api/integrations/{provider}`` over HTTP, and the whole mail flow through the HTTP functions:
connect -> run -> approve -> resume CloudEvent (delivered 3 times) -> one send at the fake Gmail."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from flask.testing import FlaskClient
from functions_framework import create_app as create_function_app

from devfakes.google import FakeGoogle
from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import Model
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.state.paths import integration as integration_path
from tests.connectors.gmail_support import REFRESH, google_settings
from tests.connectors.tool_support import started
from tests.messages import published_event

ALICE = {"Authorization": "Bearer dev:alice"}
TOKENS = {"accessToken": "ya29.fake-access-token", "refreshToken": REFRESH, "expiresIn": 3599,
          "scopes": ["https://www.googleapis.com/auth/gmail.modify"], "accountEmail": "alice@example.com"}


fake = started(FakeGoogle)


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


@pytest.fixture
def install(fake: FakeGoogle, sqlite_docstore: DocStore) -> Iterator[Any]:
    def make(model: Model | None = None, **settings: Any) -> Runtime:
        rt = Runtime(google_settings(fake, **settings), store=sqlite_docstore, model=model or ScriptedModel([]),
                     authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
        set_runtime(rt)
        return rt

    yield make
    set_runtime(None)


def test_connect_stores_encrypted_and_never_echoes_tokens(install: Any, client: FlaskClient) -> None:
    rt = install()
    before = time.time()
    resp = client.post("/api/integrations/google", json=TOKENS, headers=ALICE)
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["ok"] is True and body["provider"] == "google" and body["connected"] is True
    expires = datetime.fromisoformat(body["expiresAt"]).timestamp()  # RFC 3339, like every time on the wire
    assert body["accountEmail"] == "alice@example.com" and expires >= before + 3599 - 0.001  # milliseconds on the wire
    assert "ya29" not in resp.get_data(as_text=True) and REFRESH not in resp.get_data(as_text=True)
    doc = rt.store.get(integration_path("alice", "google"))
    assert doc is not None and "ya29" not in json.dumps(doc.data)
    assert rt.connectors().vault.tokens("alice", "google").refresh_token == REFRESH
    status = client.get("/api/integrations", headers=ALICE).get_json()
    assert [(i["provider"], i["connected"]) for i in status["integrations"]] == [
        ("google", True), ("slack", False), ("github", False)]
    assert "ya29" not in json.dumps(status)
    slack = client.post("/api/integrations/slack", json={"accessToken": "xoxp-1", "teamId": "T1"}, headers=ALICE)
    assert slack.status_code == 200 and "xoxp" not in slack.get_data(as_text=True)
    assert rt.connectors().slack_token("alice") == "xoxp-1"


def test_connect_github(install: Any, client: FlaskClient) -> None:
    rt = install()
    resp = client.post("/api/integrations/github", json={"accessToken": "github_pat_11ABC", "scopes": ["repo"]},
                       headers=ALICE)
    assert resp.status_code == 200 and "github_pat" not in resp.get_data(as_text=True)
    body = resp.get_json()
    assert (body["provider"], body["connected"], body["scopes"]) == ("github", True, ["repo"])
    assert rt.connectors().github_token("alice") == "github_pat_11ABC"
    doc = rt.store.get(integration_path("alice", "github"))
    assert doc is not None and "github_pat" not in json.dumps(doc.data)
    one = client.get("/api/integrations/github", headers=ALICE).get_json()
    assert (one["ok"], one["provider"], one["connected"]) == (True, "github", True)
    assert client.delete("/api/integrations/github", headers=ALICE).get_json()["removed"] is True
    assert rt.store.get(integration_path("alice", "github")) is None


def test_disconnect(install: Any, client: FlaskClient) -> None:
    rt = install()
    client.post("/api/integrations/google", json=TOKENS, headers=ALICE)
    resp = client.delete("/api/integrations/google", headers=ALICE)
    assert resp.status_code == 200
    assert resp.get_json() == {"ok": True, "provider": "google", "connected": False, "removed": True}
    assert rt.store.get(integration_path("alice", "google")) is None
    assert client.delete("/api/integrations/google", headers=ALICE).get_json()["removed"] is False


def test_each_user_only_touches_their_own_tokens(install: Any, client: FlaskClient) -> None:
    rt = install()
    client.post("/api/integrations/google", json=TOKENS, headers=ALICE)
    client.delete("/api/integrations/google", headers={"Authorization": "Bearer dev:bob"})
    assert rt.store.get(integration_path("alice", "google")) is not None


@pytest.mark.parametrize(("method", "path", "body", "headers", "status", "code"), [
    ("POST", "/api/integrations/google", TOKENS, {}, 401, "UNAUTHENTICATED"),
    ("POST", "/api/integrations/gitlab", TOKENS, ALICE, 404, "UNKNOWN_INTEGRATION"),
    ("POST", "/api/integrations", TOKENS, ALICE, 405, "METHOD_NOT_ALLOWED"),
    ("DELETE", "/api/integrations", None, ALICE, 405, "METHOD_NOT_ALLOWED"),
    ("PUT", "/api/integrations/google", TOKENS, ALICE, 405, "METHOD_NOT_ALLOWED"),
    ("POST", "/api/integrations/google", {}, ALICE, 400, "INVALID_REQUEST"),
    ("POST", "/api/integrations/google", {**TOKENS, "accessToken": ""}, ALICE, 400, "INVALID_REQUEST"),
    ("POST", "/api/integrations/google", {**TOKENS, "accessToken": "a b"}, ALICE, 400, "INVALID_REQUEST"),
    ("POST", "/api/integrations/google", {**TOKENS, "clientSecret": "x"}, ALICE, 400, "INVALID_REQUEST"),
    ("POST", "/api/integrations/google", {**TOKENS, "expiresAt": 2e9}, ALICE, 400, "INVALID_REQUEST"),
    ("POST", "/api/integrations/google", {**TOKENS, "expiresIn": -5}, ALICE, 400, "INVALID_REQUEST"),
    ("POST", "/api/integrations/google", {**TOKENS, "accountEmail": "nobody"}, ALICE, 400, "INVALID_REQUEST"),
    ("POST", "/api/integrations/google", {**TOKENS, "scopes": "gmail"}, ALICE, 400, "INVALID_REQUEST"),
])
def test_bad_requests(install: Any, client: FlaskClient, method: str, path: str, body: dict[str, Any],
                      headers: dict[str, str], status: int, code: str) -> None:
    rt = install()
    resp = client.open(path, method=method, json=body, headers=headers)
    assert resp.status_code == status
    assert resp.get_json()["error"]["code"] == code
    assert "ya29" not in resp.get_data(as_text=True)
    assert rt.store.get(integration_path("alice", "google")) is None


def test_invalid_body_names_the_field(install: Any, client: FlaskClient) -> None:
    install()
    resp = client.post("/api/integrations/google", json={**TOKENS, "accountEmail": "nobody"}, headers=ALICE)
    assert [e["field"] for e in resp.get_json()["error"]["details"]["errors"]] == ["accountEmail"]
    not_json = client.post("/api/integrations/google", data="accessToken=x", headers=ALICE,
                           content_type="application/x-www-form-urlencoded")
    assert not_json.status_code == 415


def test_without_an_encryption_key_the_endpoint_refuses(install: Any, client: FlaskClient) -> None:
    install(credentials_encryption_key=None)
    resp = client.post("/api/integrations/google", json=TOKENS, headers=ALICE)
    assert resp.status_code == 503 and resp.get_json()["error"]["code"] == "INTEGRATIONS_NOT_CONFIGURED"


def test_deployed_entry_point(install: Any) -> None:
    install()
    fn = create_function_app("integrations", "main.py").test_client()  # type: ignore[no-untyped-call]
    resp = fn.post("/api/integrations/google", json=TOKENS, headers=ALICE)
    assert resp.status_code == 200 and resp.get_json()["connected"] is True, resp.get_data(as_text=True)[:2000]


def test_http_connect_run_approve_resume_sends_once(install: Any, client: FlaskClient, fake: FakeGoogle) -> None:
    mail = {"to": ["bob@example.com"], "subject": "Lunch", "body": "Friday at noon?"}
    rt = install(ScriptedModel([calls_turn(call("gmail_send", mail)), text_turn("Sent.")]))
    assert client.post("/api/integrations/google", json=TOKENS, headers=ALICE).status_code == 200
    run = client.post("/api/agent/run", json={"prompt": "Ask Bob to lunch"}, headers=ALICE).get_json()
    assert run["status"] == "awaiting_confirmation" and not fake.sent
    assert run["approval"]["preview"] == "Send an email\nTo: bob@example.com\nSubject: Lunch\nFriday at noon?"
    resp = client.post("/api/agent/approve", json={"approvalId": run["approval"]["id"], "decision": "approve"},
                       headers=ALICE)
    assert resp.status_code == 202
    headers, data = published_event(rt)
    resume = create_function_app("resume", "main.py", "cloudevent").test_client()  # type: ignore[no-untyped-call]
    for _ in range(3):
        assert resume.post("/", headers=headers, data=data).status_code == 200
    assert len([r for r in fake.requests if r.path.endswith("/messages/send")]) == 1
    assert fake.sent[0].message["To"] == "bob@example.com"
    final = client.get(f"/api/agent/runs/{run['runId']}", headers=ALICE).get_json()
    assert final["status"] == "completed" and final["result"]["summary"] == "Sent."
