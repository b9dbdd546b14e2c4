"""Ids a client chooses that Firestore reserves (session 2026-11-26d outside trial,
docs/session-notes/2026-11-26d/issue-33p.md).

Firestore refuses a document id of the form ``__.*__`` ("Resource id is invalid because it is
reserved"). Client-chosen ids become document ids (a ``threadId``, a webhook's or MCP server's name,
any ``{runId}``/``{sessionId}``... read by id), and the id patterns allowed them: on Firestore every
route given one answered **500** (a run on ``threadId: "__main__"``, ``GET /api/agent/runs/__x__``,
``DELETE /api/agent/webhooks/__x__``, the admin API's ``/users/__x__``...). On SQLite they worked,
so nothing but a Firestore deployment showed it. Now such an id is refused where it is given: a 400
naming the field in a body or a name, a 404 in a path (no such object can exist). Both stores.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared import routes
from shared.models.scripted import ScriptedModel, text_turn
from shared.state.docstore import DocStore
from tests.agent.conftest import install
from tests.e2e.conftest import ALICE

ADMIN = {"Authorization": "Bearer dev-admin:ops"}
A2A = {"A2A-Version": "1.0"}
RESERVED = ["__x__", "__main__", "____", "__" + "a" * 124 + "__"]


@pytest.fixture
def runtime(store: DocStore) -> Iterator[None]:
    install(store, ScriptedModel([text_turn("hi")] * 40))
    yield
    from shared.runtime import set_runtime

    set_runtime(None)


def _ok_or_4xx(resp: Any, what: str) -> None:
    assert resp.status_code < 500, (what, resp.status_code, resp.get_data(as_text=True)[:300])


@pytest.mark.parametrize("rid", RESERVED)
def test_a_reserved_id_in_a_body_is_a_400_naming_the_field(runtime: None, client: FlaskClient,
                                                            caplog: pytest.LogCaptureFixture, rid: str) -> None:
    agui = {"threadId": rid, "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}],
            "state": {}, "tools": [], "context": [], "forwardedProps": {}}
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", "/api/agent/run", {"prompt": "hi", "threadId": rid}, "threadId"),
        ("POST", "/api/agent/run/stream", {"prompt": "hi", "threadId": rid}, "threadId"),
        ("POST", "/api/agent/approve", {"approvalId": rid, "decision": "approve"}, "approvalId"),
        ("PUT", "/api/agent/schedules/s1", {"cron": "0 9 * * *", "prompt": "hi", "threadId": rid}, "threadId"),
        ("POST", "/api/agent/agui", agui, "threadId"),
    ]
    with caplog.at_level(logging.INFO):
        for method, path, body, field in cases:
            resp = client.open(path, method=method, json=body, headers=ALICE)
            assert resp.status_code == 400, (path, resp.get_data(as_text=True)[:300])
            assert field in resp.get_data(as_text=True), (path, resp.get_json())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert client.get("/api/agent/runs", headers=ALICE).get_json()["runs"] == []  # nothing written


NAMED = ["/api/agent/webhooks/{}", "/api/agent/schedules/{}", "/api/integrations/mcp/{}", "/api/integrations/a2a/{}"]


@pytest.mark.parametrize("rid", RESERVED[:2])
def test_a_reserved_name_is_a_400_on_every_route_of_a_named_object(runtime: None, client: FlaskClient,
                                                                    rid: str) -> None:
    bodies = {"webhooks": {"url": "https://example.com/h", "events": ["run.completed"]},
              "schedules": {"cron": "0 9 * * *", "prompt": "hi"}, "mcp": {"url": "https://example.com/m"},
              "a2a": {"url": "https://example.com/a"}}
    for template in NAMED:
        path = template.format(rid)
        body = next(v for k, v in bodies.items() if f"/{k}/" in path)
        write = "PUT" if "/agent/" in path else "POST"
        for method, kwargs in [(write, {"json": body}), ("GET", {}), ("DELETE", {})]:
            resp = client.open(path, method=method, headers=ALICE, **kwargs)
            assert resp.status_code == 400, (method, path, resp.get_data(as_text=True)[:300])
            error = resp.get_json()["error"]
            assert error["code"].startswith("INVALID_") and "not __…__" in error["message"], error
    for extra in ("/api/agent/webhooks/{}/deliveries", "/api/agent/schedules/{}/runs"):
        _ok_or_4xx(client.get(extra.format(rid), headers=ALICE), extra)


def _concrete(route: routes.Route, rid: str) -> str:
    return re.sub(r"\{([A-Za-z_]+)\}", lambda m: "google" if m.group(1) == "provider" else rid, route.path)


@pytest.mark.parametrize("rid", RESERVED[:2])
def test_a_reserved_id_in_a_path_is_never_a_500(runtime: None, client: FlaskClient, rid: str) -> None:
    """Every route with a path parameter, given a reserved id: a 4xx (a read or delete by id: 404,
    nothing can have it; a write may refuse its body first)."""
    for route in routes.ROUTES:
        if not route.path_params:
            continue
        headers = {**ALICE, **A2A, **(ADMIN if route.path.startswith("/api/admin/") else {})}
        body = {"prompt": "hi", "cron": "0 9 * * *"} if route.request is not None else None
        resp = client.open(_concrete(route, rid), method=route.method, headers=headers,
                           **({"json": body} if body is not None else {}))
        _ok_or_4xx(resp, f"{route.method} {route.path}")
        if route.method in ("GET", "DELETE") and route.path_params not in (["name"], ["provider"]):
            assert resp.status_code == 404, (route.method, route.path, resp.get_data(as_text=True)[:200])


def test_ids_next_to_the_reserved_form_are_still_ids(runtime: None, client: FlaskClient) -> None:
    for tid in ("_x_", "__x", "x__", "__", "___", "_", "a" * 128, "__x_", "_x__", "-__-"):
        resp = client.post("/api/agent/run", json={"prompt": "hi", "threadId": tid}, headers=ALICE)
        assert resp.status_code == 200, (tid, resp.get_json())
        assert client.get(f"/api/agent/threads/{tid}", headers=ALICE).status_code == 200, tid
    ok = client.put("/api/agent/schedules/__daily", json={"cron": "0 9 * * *", "prompt": "hi"}, headers=ALICE)
    assert ok.status_code == 200, ok.get_json()
    assert client.post("/api/agent/run", json={"prompt": "hi", "threadId": "a" * 129}, headers=ALICE).status_code == 400


def test_the_goals_agents_user_id_of_the_reserved_form_is_a_400_not_a_lost_usage_entry(
        runtime: None, client: FlaskClient, caplog: pytest.LogCaptureFixture) -> None:
    """``POST /agent/run {"userId": "__x__"}`` answered 200 and its usage entry (``users/__x__/...``)
    was logged as lost on Firestore."""
    with caplog.at_level(logging.INFO):
        refused = client.post("/agent/run", json={"message": "hi", "userId": "__x__", "sessionId": "s1"})
        assert refused.status_code == 400 and "userId" in refused.get_data(as_text=True), refused.get_json()
        for uid in ("_x_", "__x", "u__"):
            ok = client.post("/agent/run", json={"message": "hi", "userId": uid, "sessionId": "s1"})
            assert ok.status_code == 200, (uid, ok.get_json())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
            and "usage entry" in r.getMessage()] == []


@pytest.mark.parametrize("task_id", ["__x__", "__main__", "run_x/pushConfigs/c1"])
def test_an_a2a_task_id_no_task_can_have_is_task_not_found_not_a_500(runtime: None, client: FlaskClient,
                                                                       task_id: str) -> None:
    """The A2A server read ``users/{uid}/a2aTasks/{taskId}`` with the id as given: ``__x__`` was a 500
    ("unknown exception") on Firestore on every task route and JSON-RPC method."""
    from urllib.parse import quote

    headers = {**ALICE, **A2A}
    tid = quote(task_id, safe="")
    for method, path in [("GET", f"/a2a/tasks/{tid}"), ("POST", f"/a2a/tasks/{tid}:cancel"),
                         ("GET", f"/a2a/tasks/{tid}/pushNotificationConfigs"),
                         ("GET", f"/a2a/tasks/{tid}/pushNotificationConfigs/c1"),
                         ("DELETE", f"/a2a/tasks/{tid}/pushNotificationConfigs/c1")]:
        resp = client.open(path, method=method, headers=headers)
        assert resp.status_code == 404, (method, path, resp.get_data(as_text=True)[:300])
    for rpc, params in [("GetTask", {"id": task_id}), ("CancelTask", {"id": task_id}),
                        ("ListTaskPushNotificationConfigs", {"taskId": task_id})]:
        body = client.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": rpc, "params": params},
                           headers=headers).get_json()
        assert body["error"]["code"] == -32001, (rpc, body)  # TaskNotFoundError
