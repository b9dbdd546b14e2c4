"""Plan sessions over HTTP (issue 10): plan → refine → confirm → execute task by task, through
continue messages (one invocation each), with events, history, usage and the final log."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from tests.messages import deliver as deliver
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script

ALICE = {"Authorization": "Bearer dev:alice"}
BOB = {"Authorization": "Bearer dev:bob"}


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def events(client: FlaskClient, sid: str, after: int = 0) -> list[dict[str, Any]]:
    resp = client.get(f"/api/agent/sessions/{sid}/events?after={after}", headers=ALICE)
    assert resp.status_code == 200 and resp.mimetype == "application/x-ndjson"
    return [json.loads(line) for line in resp.data.decode().splitlines() if line]


def create(client: FlaskClient, **body: Any) -> dict[str, Any]:
    resp = client.post("/api/agent/sessions", json={"prompt": "Summarise my notes and publish", **body},
                       headers=ALICE)
    assert resp.status_code in (200, 201), resp.get_json()
    return resp.get_json()  # type: ignore[no-any-return]


def test_plan_refine_confirm_execute(make_rt: MakeRuntime, client: FlaskClient) -> None:
    script = Script(acts={"Read the notes": [("search_memory", {"query": "notes"})],
                          "Write the summary": [("search_memory", {"query": "summary"}),
                                                ("search_memory", {"query": "more"})]},
                    refine=lambda p: {"tasks": [*p["currentPlan"][:2], {"id": None, "title": "Publish it",
                                                                         "description": "post it"}],
                                      "summary": "publishing gets its own description"})
    rt = make_rt(script)
    body = create(client)
    assert body["ok"] is True and body["status"] == "awaiting_confirmation"
    assert body["plan"]["version"] == 1
    assert [t["title"] for t in body["plan"]["tasks"]] == script.tasks
    assert all(t["status"] == "pending" and t["taskId"] for t in body["plan"]["tasks"])
    sid = body["sessionId"]
    assert datetime.fromisoformat(body["deadline"].replace("Z", "+00:00")) > datetime.now(UTC)

    refined = client.post(f"/api/agent/sessions/{sid}/refine", json={"message": "describe publishing better"},
                          headers=ALICE)
    assert refined.status_code == 200, refined.get_json()
    plan2 = refined.get_json()
    assert plan2["plan"]["version"] == 2 and plan2["plan"]["tasks"][2]["description"] == "post it"
    stale = client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE)
    assert stale.status_code == 409 and stale.get_json()["error"]["code"] == "PLAN_VERSION_MISMATCH"
    ok = client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 2}, headers=ALICE)
    assert ok.status_code == 202 and ok.get_json()["status"] == "executing"
    again = client.post(f"/api/agent/sessions/{sid}/refine", json={"message": "x"}, headers=ALICE)
    assert again.status_code == 409 and again.get_json()["error"]["code"] == "SESSION_NOT_AWAITING_CONFIRMATION"

    invocations = deliver(rt)
    assert invocations >= 3  # one per task at least: durable slices
    view = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    assert view["status"] == "completed", view
    assert [t["status"] for t in view["plan"]["tasks"] if t["status"] != "obsolete"] == ["completed"] * 3
    first = view["plan"]["tasks"][0]
    assert [h["action"]["tool"] for h in first["history"]] == ["search_memory", "task_done"]
    assert first["history"][0]["reason"].startswith("I will use search_memory")
    assert view["result"]["status"] == "completed"
    log = view["result"]["log"]
    assert [(e["taskId"], e["tool"]) for e in log if e["tool"] != "task_done"] == [
        ("t1", "search_memory"), ("t2", "search_memory"), ("t2", "search_memory")]
    assert all({"taskId", "tool", "arguments", "outcome", "at"} <= set(e) for e in log)
    assert view["usage"]["requests"] >= 1 and view["plan"]["version"] == 2
    assert [v["version"] for v in view["plan"]["versions"]] == [1, 2]
    evs = events(client, sid)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    types = [e["type"] for e in evs]
    for t in ("status", "plan_updated", "task_start", "reason", "act", "observe", "reflect", "task_complete",
              "result"):
        assert t in types, t
    assert types.count("task_start") == 3 and types.count("task_complete") == 3
    assert evs[-1]["type"] == "result" and evs[-1]["result"]["status"] == "completed"
    # Every model request made for the session carries its objective.
    assert all("Summarise my notes and publish" in json.dumps(r.model_dump()) for r in script.requests)
    # The ledger has the planner's, the executor's and the reflector's calls.
    kinds = {(e.component, e.operation_type) for e in rt.usage.between("alice", 0, 1e12)}
    assert {("planner", "plan_generation"), ("loop", "executor"), ("reflector", "executor")} <= kinds
    assert rt.outbox.repo.all() == []


def test_another_users_session_is_404(make_rt: MakeRuntime, client: FlaskClient) -> None:
    make_rt(Script())
    sid = create(client)["sessionId"]
    for method, path, body in (("get", "", None), ("get", "/events", None), ("post", "/refine", {"message": "x"}),
                               ("post", "/confirm", {"planVersion": 1}), ("post", "/cancel", None)):
        resp = getattr(client, method)(f"/api/agent/sessions/{sid}{path}", json=body, headers=BOB)
        assert resp.status_code == 404 and resp.get_json()["error"]["code"] == "SESSION_NOT_FOUND", path
    assert client.get(f"/api/agent/sessions/{sid}").status_code == 401


@pytest.mark.parametrize(("body", "field"), [
    ({"prompt": "   "}, "prompt"),
    ({"prompt": "x", "deadline": "2020-01-01T00:00:00Z"}, "deadline"),
    ({"prompt": "x", "deadline": (datetime.now(UTC) + timedelta(days=8)).isoformat()}, "deadline"),
    ({"prompt": "x", "deadline": "tomorrow"}, "deadline"),
    ({"prompt": "x", "tools": ["search_memory", "rm_rf"]}, "tools"),
    ({"prompt": "x", "colour": "blue"}, "colour"),
])
def test_bad_session_requests(make_rt: MakeRuntime, client: FlaskClient, body: dict[str, Any], field: str) -> None:
    make_rt(Script())
    resp = client.post("/api/agent/sessions", json=body, headers=ALICE)
    assert resp.status_code == 400, resp.get_json()
    assert field in json.dumps(resp.get_json()["error"])


def test_a_plan_that_stays_invalid_fails_the_session(make_rt: MakeRuntime, client: FlaskClient) -> None:
    script = Script(plan_answers=["not json", '{"tasks": []}'])
    make_rt(script)
    body = create(client)
    assert body["ok"] is False and body["status"] == "failed" and body["error"]["code"] == "MALFORMED_PLAN"
    assert script.counts["plan"] == 2  # the answer and one repair


def test_a_plan_repaired_once_is_accepted(make_rt: MakeRuntime, client: FlaskClient) -> None:
    script = Script(plan_answers=['{"tasks": "nope"}'])
    make_rt(script)
    body = create(client)
    assert body["ok"] is True and script.counts["plan"] == 2


def test_cancel_before_and_during_execution(make_rt: MakeRuntime, client: FlaskClient) -> None:
    rt = make_rt(Script(acts={"Read the notes": [("search_memory", {"query": "a"})]}))
    sid = create(client)["sessionId"]
    resp = client.post(f"/api/agent/sessions/{sid}/cancel", headers=ALICE)
    assert resp.status_code == 202 and resp.get_json()["status"] == "cancelled"
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1},
                       headers=ALICE).status_code == 409
    sid2 = create(client)["sessionId"]
    client.post(f"/api/agent/sessions/{sid2}/confirm", json={"planVersion": 1}, headers=ALICE)
    assert client.post(f"/api/agent/sessions/{sid2}/cancel", headers=ALICE).get_json()["cancelRequested"] is True
    deliver(rt)  # execution stops before its first act
    view = client.get(f"/api/agent/sessions/{sid2}", headers=ALICE).get_json()
    assert view["status"] == "cancelled" and view["error"]["code"] == "CANCELLED"
    assert all(not t["history"] for t in view["plan"]["tasks"])  # no act started
    # Issue 18: no task is left pending or in progress by a cancel, before or during execution.
    assert {t["status"] for t in view["plan"]["tasks"]} == {"cancelled"}
    before = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    assert {t["status"] for t in before["plan"]["tasks"]} == {"cancelled"}
    assert [e["status"] for e in events(client, sid2) if e["type"] == "task_complete"] == ["cancelled"]


def test_a_reflection_may_change_the_plan_but_not_a_completed_task(make_rt: MakeRuntime,
                                                                    client: FlaskClient) -> None:
    def reflect(prompt: dict[str, Any]) -> dict[str, Any]:
        done = prompt["lastAct"]["action"]["tool"] == "task_done"
        mods: list[dict[str, Any]] = []
        if prompt["currentTask"]["id"] == "t2" and done:
            mods = [{"op": "modify", "taskId": "t1", "title": "rewrite history", "reason": "try"},
                    {"op": "obsolete", "taskId": "t3", "reason": "not needed after all"},
                    {"op": "add", "after": "t2", "title": "Tell the team", "reason": "they asked"}]
        return {"taskComplete": done, "taskFailed": False, "summary": "ok", "modifications": mods}

    rt = make_rt(Script(reflect=reflect))
    sid = create(client)["sessionId"]
    client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE)
    deliver(rt)
    view = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    assert view["status"] == "completed"
    by_id = {t["taskId"]: t for t in view["plan"]["tasks"]}
    assert by_id["t1"]["title"] == "Read the notes"  # a completed task is never modified
    assert by_id["t3"]["status"] == "obsolete" and by_id["t4"]["title"] == "Tell the team"
    assert by_id["t4"]["status"] == "completed"
    assert view["plan"]["version"] == 2
    changes = view["plan"]["versions"][-1]["changes"]
    assert {c["op"] for c in changes} == {"refine", "obsolete", "add"}
    assert any("refused" in c["what"] and c["taskId"] == "t1" for c in changes)


def test_a_task_out_of_acts_fails_the_session(make_rt: MakeRuntime, client: FlaskClient) -> None:
    script = Script(acts={"Read the notes": [("search_memory", {"query": str(i)}) for i in range(10)]})
    rt = make_rt(script, plan_max_acts_per_task=3)
    sid = create(client)["sessionId"]
    client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE)
    deliver(rt)
    view = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    assert view["status"] == "failed" and view["error"]["code"] == "ACT_LIMIT"
    assert view["plan"]["tasks"][0]["status"] == "failed" and len(view["plan"]["tasks"][0]["history"]) == 3


def test_every_session_response_and_event_matches_the_openapi_document(make_rt: MakeRuntime,
                                                                       client: FlaskClient) -> None:
    from tests.e2e.test_openapi import check

    doc = client.get("/openapi.json").get_json()
    script = Script(acts={"Read the notes": [("save_memory", {"text": "note"})]},
                    refine=lambda p: {"tasks": p["currentPlan"][:2], "summary": "shorter"})
    rt = make_rt(script)
    created = check(doc, "/api/agent/sessions", "post",
                    client.post("/api/agent/sessions", json={"prompt": "do it"}, headers=ALICE))
    sid = created["sessionId"]
    one = "/api/agent/sessions/{sessionId}"
    check(doc, one + "/refine", "post", client.post(f"/api/agent/sessions/{sid}/refine", json={"message": "short"},
                                                    headers=ALICE))
    check(doc, one + "/confirm", "post", client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 9},
                                                     headers=ALICE))
    check(doc, one + "/confirm", "post", client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 2},
                                                     headers=ALICE))
    deliver(rt)
    paused = check(doc, one, "get", client.get(f"/api/agent/sessions/{sid}", headers=ALICE))
    client.post("/api/agent/approve", json={"approvalId": paused["pendingApprovals"][0]["approvalId"],
                                            "decision": "approve"}, headers=ALICE)
    deliver(rt)
    done = check(doc, one, "get", client.get(f"/api/agent/sessions/{sid}", headers=ALICE))
    assert done["status"] == "completed"
    evs = check(doc, one + "/events", "get", client.get(f"/api/agent/sessions/{sid}/events", headers=ALICE))
    assert {"approval_required", "plan_updated", "result"} <= {e["type"] for e in evs}
    check(doc, one + "/cancel", "post", client.post(f"/api/agent/sessions/{sid}/cancel", headers=ALICE))
    check(doc, one, "get", client.get("/api/agent/sessions/ses_missing", headers=ALICE))
    failed = check(doc, "/api/agent/sessions", "post",
                   client.post("/api/agent/sessions", json={"prompt": "   "}, headers=ALICE))
    assert failed["error"]["code"] == "INVALID_REQUEST"


def test_a_session_without_tools_reminds_the_model(make_rt: MakeRuntime, client: FlaskClient) -> None:
    script = Script()
    rt = make_rt(script)
    sid = create(client, tools=[])["sessionId"]
    client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE)
    deliver(rt)
    acts = [r for r in script.requests if "executing a confirmed plan" in r.system_instruction]
    assert acts and all(r.tools == [] and r.system_instruction.endswith(
        "You currently have no tools, focus on guidance.") for r in acts)


def test_the_callers_sessions_are_listed_newest_first(make_rt: MakeRuntime, client: FlaskClient) -> None:
    from tests.e2e.test_openapi import check

    make_rt(Script())
    first = create(client, prompt="first")["sessionId"]
    second = create(client, prompt="second")["sessionId"]
    doc = client.get("/openapi.json").get_json()
    listed = check(doc, "/api/agent/sessions", "get", client.get("/api/agent/sessions?limit=10", headers=ALICE))
    assert [s["sessionId"] for s in listed["sessions"]] == [second, first]
    assert client.get("/api/agent/sessions", headers=BOB).get_json()["sessions"] == []
    bad = check(doc, "/api/agent/sessions", "get", client.get("/api/agent/sessions?limit=0", headers=ALICE))
    assert bad["error"]["details"]["field"] == "limit"


@pytest.mark.parametrize("body", [None, {}, {"reason": "changed my mind"}])
def test_cancel_takes_no_body_an_empty_object_or_a_reason(make_rt: MakeRuntime, client: FlaskClient,
                                                          body: dict[str, Any] | None) -> None:
    """Issue 18 finding 1: a JSON body (what typical clients send with every POST) was read as empty."""
    make_rt(Script())
    before = create(client)["sessionId"]
    resp = client.post(f"/api/agent/sessions/{before}/cancel", json=body, headers=ALICE)
    assert resp.status_code == 202, resp.get_json()
    assert resp.get_json()["status"] == "cancelled"
    view = client.get(f"/api/agent/sessions/{before}", headers=ALICE).get_json()
    assert view["status"] == "cancelled"
    assert view.get("cancelReason") == (body or {}).get("reason")
    again = client.post(f"/api/agent/sessions/{before}/cancel", json=body, headers=ALICE)  # a client's retry
    assert again.status_code == 202 and again.get_json()["status"] == "cancelled"
    during = create(client)["sessionId"]
    client.post(f"/api/agent/sessions/{during}/confirm", json={"planVersion": 1}, headers=ALICE)
    resp = client.post(f"/api/agent/sessions/{during}/cancel", json=body, headers=ALICE)
    assert resp.status_code == 202 and resp.get_json()["cancelRequested"] is True
    assert client.post(f"/api/agent/sessions/{during}/cancel", json=body,
                       headers=ALICE).get_json()["cancelRequested"] is True
    view = client.get(f"/api/agent/sessions/{during}", headers=ALICE).get_json()
    assert view.get("cancelReason") == (body or {}).get("reason")


@pytest.mark.parametrize(("body", "code"), [({"reason": 3}, "INVALID_REQUEST"), ({"why": "x"}, "INVALID_REQUEST"),
                                            ([], "INVALID_JSON")])
def test_a_cancel_body_that_is_not_the_contract_is_a_400(make_rt: MakeRuntime, client: FlaskClient,
                                                         body: Any, code: str) -> None:
    make_rt(Script())
    sid = create(client)["sessionId"]
    resp = client.post(f"/api/agent/sessions/{sid}/cancel", json=body, headers=ALICE)
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == code
    assert client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()["status"] == "awaiting_confirmation"
