"""Per-user limits on plan sessions (issue 14 item 7): active sessions (checked before the planning
call and reserved just before the creating commit, also for a session a chat run starts) and model
tokens per day (create, refine, confirm). Refusals create nothing and touch only that user."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from flask.testing import FlaskClient

from bench.plan_model import Script, model
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.plans import sessions as engine
from shared.state.docstore import DocStore
from tests.limits.conftest import ALICE, BOB, Clock, MakeRuntime
from tests.limits.support import ids, refused, snapshot
from tests.limits.test_runs_and_requests import entry
from tests.messages import deliver


def create(client: FlaskClient, headers: dict[str, str] = ALICE) -> Any:
    return client.post("/api/agent/sessions", json={"prompt": "Summarise my notes and publish"}, headers=headers)


def test_active_sessions(make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    script = Script()
    rt = make_rt(model(script), limit_active_sessions=1)
    first = create(client)
    assert first.status_code == 201 and first.get_json()["status"] == "awaiting_confirmation"
    sid = first.get_json()["sessionId"]
    before = snapshot(store, "alice")
    error = refused(client, create(client), "TOO_MANY_ACTIVE_SESSIONS", path="/api/agent/sessions", method="post",
                    retry_after=60)
    assert error["details"] == {"limit": 1, "active": [sid], "waiting": [sid], "retryAfterS": 60}
    # Refused before the planning call: no tokens spent, nothing written (no session, event, outbox).
    assert script.counts == {"plan": 1}
    assert snapshot(store, "alice") == before
    assert create(client, BOB).status_code == 201  # per user
    # A confirmed (executing) session still counts; a cancelled one does not.
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE).status_code == 202
    refused(client, create(client), "TOO_MANY_ACTIVE_SESSIONS", path="/api/agent/sessions", method="post")
    assert client.post(f"/api/agent/sessions/{sid}/cancel", headers=ALICE).status_code == 202
    deliver(rt)
    assert rt.sessions.get(sid)[0].terminal  # type: ignore[index]
    assert create(client).status_code == 201


def test_a_session_losing_the_race_for_the_last_slot_creates_nothing(make_rt: MakeRuntime,
                                                                     store: DocStore) -> None:
    """The check before planning passes for two sessions planned at once; the creating transaction
    reserves the slot, so the one that finishes planning second is refused and writes nothing."""
    script = Script()
    racing: list[str] = []

    def answer(request: ModelRequest) -> Turn:
        if not racing:  # while the first session plans, another one is created and takes the slot
            racing.append("rival")
            rival = engine.start_planning(rt.services, rt.sessions, "alice", "rival", deadline=deadline)
            racing.append(rival.session.session_id)
        return script.answer(request)

    rt = make_rt(FunctionModel(answer), limit_active_sessions=1)
    deadline = datetime(2100, 1, 1, tzinfo=UTC).timestamp()
    try:
        engine.start_planning(rt.services, rt.sessions, "alice", "first", deadline=deadline, session_id="ses_first")
    except Exception as exc:
        assert getattr(exc, "code", None) == "TOO_MANY_ACTIVE_SESSIONS"
    else:
        raise AssertionError("two sessions took one slot")
    assert ids(store, "sessions") == [racing[1]]
    assert ids(store, "sessions/ses_first/events") == [] and ids(store, "sessions/ses_first/tasks") == []


def test_a_session_started_by_a_chat_run_counts(make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    """``agent_create_plan`` at the limit: the tool answers the limit's error to the model (no session
    is created) and the run goes on."""
    script = Script()
    seen: dict[str, Any] = {}

    def answer(request: ModelRequest) -> Turn:
        if "[CONTEXT:" not in request.system_instruction:
            return script.answer(request)
        for turn in request.turns:
            for p in turn.parts:
                if p.function_response is not None and p.function_response.name == "agent_create_plan":
                    seen.update(p.function_response.response)
                    return text_turn("I could not make a plan now.")
        return calls_turn(call("agent_create_plan", {"objective": "Summarise my notes"}))

    make_rt(FunctionModel(answer, name="gemini-3-flash-preview"), limit_active_sessions=1)
    assert create(client).status_code == 201
    sessions_before = ids(store, "sessions")
    resp = client.post("/api/agent/run", json={"prompt": "summarise my notes, step by step"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    body = resp.get_json()
    assert body["status"] == "completed" and body["output"]["text"] == "I could not make a plan now."
    assert "TOO_MANY_ACTIVE_SESSIONS" in json.dumps(seen), seen
    assert ids(store, "sessions") == sessions_before
    assert script.counts == {"plan": 1}  # only the session created over HTTP was planned


def test_daily_tokens_refuse_new_plan_work(make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    clock = Clock(datetime(2031, 3, 4, 10, 0, tzinfo=UTC).timestamp())
    script = Script()
    rt = make_rt(model(script), clock=clock, limit_daily_tokens=1000)
    created = create(client)
    assert created.status_code == 201
    sid = created.get_json()["sessionId"]
    rt.usage.record(entry("alice", "2031-03-04", 1000, 1))
    before = snapshot(store, "alice")
    counts = dict(script.counts)
    refused(client, create(client), "DAILY_TOKEN_LIMIT", path="/api/agent/sessions", method="post",
            retry_after=14 * 3600)
    refused(client, client.post(f"/api/agent/sessions/{sid}/refine", json={"message": "shorter"}, headers=ALICE),
            "DAILY_TOKEN_LIMIT", path="/api/agent/sessions/{sessionId}/refine", method="post")
    refused(client, client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE),
            "DAILY_TOKEN_LIMIT", path="/api/agent/sessions/{sessionId}/confirm", method="post")
    assert script.counts == counts  # no model call
    assert snapshot(store, "alice") == before  # no session, no execution run, no outbox entry
    assert rt.sessions.get(sid)[0].status == "awaiting_confirmation"  # type: ignore[index]
    # Reads and cancelling stay possible; bob is not affected; the next day alice may go on.
    assert client.get(f"/api/agent/sessions/{sid}", headers=ALICE).status_code == 200
    assert create(client, BOB).status_code == 201
    clock.at = datetime(2031, 3, 5, 0, 0, tzinfo=UTC).timestamp()
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE).status_code == 202
