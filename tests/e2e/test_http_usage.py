"""Issue 9: the usage ledger. Every model call of every component is one document; the usage
route sums the caller's own figures; bad parameters answer 400 naming the field."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.errors import ModelError
from shared.models.base import ModelResponse, Usage
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.state.records import UsageEntry
from tests.e2e.conftest import ALICE, BOB, Install

LEDGER_FIELDS = {"entryId", "uid", "unitKind", "unitId", "component", "operationType", "profile", "model",
                 "usage", "latencyMs", "outcome", "costUsd", "at", "day", "schemaVersion"}


def three_call_model() -> ScriptedModel:
    return ScriptedModel([
        ModelResponse(turn=calls_turn(call("search_memory", {"query": "tea"})),
                      usage=Usage(requests=1, input_tokens=1000, output_tokens=100, thinking_tokens=50,
                                  cached_tokens=400, total_tokens=1150)),
        ModelResponse(turn=calls_turn(call("search_memory", {"query": "coffee"})),
                      usage=Usage(requests=1, input_tokens=2000, output_tokens=200, total_tokens=2200)),
        ModelResponse(turn=text_turn("You like tea."),
                      usage=Usage(requests=2, input_tokens=3000, output_tokens=300, total_tokens=3300)),
    ], name="gemini-3-flash-preview")


def test_a_run_with_three_model_calls_leaves_exactly_its_calls(install: Install, client: FlaskClient) -> None:
    rt = install(three_call_model())
    body = client.post("/api/agent/run", json={"prompt": "what do I drink?"}, headers=ALICE).get_json()
    assert body["status"] == "completed"
    entries = rt.usage.for_unit("alice", body["runId"])
    assert [e.step for e in entries] == [1, 2, 3]
    for e in entries:
        doc = e.to_doc()
        assert set(doc) >= LEDGER_FIELDS, LEDGER_FIELDS - set(doc)
        assert (e.uid, e.unit_kind, e.unit_id, e.component, e.operation_type, e.profile, e.outcome) == (
            "alice", "run", body["runId"], "loop", "planner_stream", "balanced", "ok")
        assert e.model == "gemini-3-flash-preview" and e.latency_ms >= 0 and e.turn_index is not None
    first = entries[0]
    # Price table (settings): 600 fresh input x 0.50 + 400 cached x 0.05 + (100 + 50) output x 3.00 per 1M.
    assert first.cost_usd == pytest.approx((600 * 0.50 + 400 * 0.05 + 150 * 3.00) / 1e6)
    assert [e.usage.input_tokens for e in entries] == [1000, 2000, 3000]
    run = client.get(f"/api/agent/runs/{body['runId']}", headers=ALICE).get_json()
    assert run["usage"]["inputTokens"] == 6000 and run["usage"]["requests"] == 4
    assert run["costUsd"] == pytest.approx(sum(e.cost_usd for e in entries))
    assert [c["step"] for c in run["modelCalls"]] == [1, 2, 3]  # the run view reads them from the ledger
    assert "modelCalls" not in rt.store.get(f"runs/{body['runId']}").data  # type: ignore[union-attr]


def test_a_failed_model_call_is_in_the_ledger_with_its_error(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([ModelError("boom", status=500)]))
    body = client.post("/api/agent/run", json={"prompt": "x"}, headers=ALICE).get_json()
    assert body["error"]["code"] == "MODEL_ERROR"
    [entry] = rt.usage.for_unit("alice", body["runId"])
    assert (entry.outcome, entry.error_code, entry.cost_usd) == ("error", "MODEL_ERROR", 0.0)


def test_goals_calls_are_in_the_ledger_and_the_route_sums_everything(install: Install,
                                                                      client: FlaskClient) -> None:
    rt = install(three_call_model())
    run = client.post("/api/agent/run", json={"prompt": "what do I drink?"}, headers=ALICE).get_json()
    goals = client.post("/agent/run", json={"message": "I want to run a marathon", "userId": "alice",
                                            "sessionId": "s1"})
    assert goals.status_code == 200
    [goal_call] = [e for e in rt.usage.between("alice", 0, time.time() + 1) if e.unit_kind == "goals"]
    assert (goal_call.unit_id, goal_call.component, goal_call.operation_type) == ("s1", "goals_planner", "goals_plan")
    by_op = client.get("/api/agent/usage?groupBy=operationType", headers=ALICE).get_json()
    assert by_op["calls"] == 4
    groups = {g["key"]: g for g in by_op["groups"]}
    assert set(groups) == {"planner_stream", "goals_plan"}
    assert groups["planner_stream"]["calls"] == 3 and groups["planner_stream"]["usage"]["inputTokens"] == 6000
    assert groups["goals_plan"]["calls"] == 1
    assert by_op["usage"]["inputTokens"] == 6000 + goal_call.usage.input_tokens
    assert by_op["costUsd"] == pytest.approx(sum(e.cost_usd for e in rt.usage.for_unit("alice", run["runId"])))
    by_model = client.get("/api/agent/usage?groupBy=model", headers=ALICE).get_json()
    assert {g["key"] for g in by_model["groups"]} == {"gemini-3-flash-preview", goal_call.model}
    by_day = client.get("/api/agent/usage?groupBy=day", headers=ALICE).get_json()
    assert [g["key"] for g in by_day["groups"]] == [datetime.now(UTC).date().isoformat()]
    by_context = client.get("/api/agent/usage?groupBy=contextType", headers=ALICE).get_json()
    assert [(g["key"], g["calls"]) for g in by_context["groups"]] == [("(none)", 1), ("general", 3)]
    # Another user sees none of it.
    bob = client.get("/api/agent/usage", headers=BOB).get_json()
    assert bob["calls"] == 0 and bob["groups"] == [] and bob["usage"]["totalTokens"] == 0
    assert client.get("/api/agent/usage").status_code == 401


def test_the_range_is_honoured(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([]))
    old = datetime(2026, 1, 10, 12, tzinfo=UTC).timestamp()
    for i, at in enumerate((old, old + 86400, old + 40 * 86400)):
        rt.usage.record(UsageEntry(entry_id=f"e{i}", uid="alice", unit_kind="run", unit_id=f"r{i}",
                                   component="loop", operation_type="planner_stream", model="m", at=at,
                                   day=datetime.fromtimestamp(at, UTC).date().isoformat(),
                                   usage=Usage(requests=1, total_tokens=10 * (i + 1))))
    got = client.get("/api/agent/usage?from=2026-01-10&to=2026-01-11&groupBy=day", headers=ALICE).get_json()
    assert [(g["key"], g["usage"]["totalTokens"]) for g in got["groups"]] == [("2026-01-10", 10), ("2026-01-11", 20)]
    got = client.get("/api/agent/usage?from=2026-01-11T00:00:00Z&to=2026-03-01T00:00:00Z", headers=ALICE).get_json()
    assert got["calls"] == 2 and got["usage"]["totalTokens"] == 50


@pytest.mark.parametrize(("query", "field"), [
    ("groupBy=color", "groupBy"),
    ("from=yesterday", "from"),
    ("to=2026-13-01", "to"),
    ("from=2026-01-01T00:00:00", "from"),  # no zone
    ("from=2026-01-01&to=2026-06-01", "from"),  # more than 93 days
    ("from=2026-02-01&to=2026-01-01", "from"),  # reversed
    ("fromm=2026-01-01", "fromm"),
])
def test_bad_usage_parameters_are_400_naming_the_field(install: Install, client: FlaskClient, query: str,
                                                       field: str) -> None:
    install(ScriptedModel([]))
    resp = client.get(f"/api/agent/usage?{query}", headers=ALICE)
    assert resp.status_code == 400
    body: dict[str, Any] = resp.get_json()
    assert body["error"]["code"] == "INVALID_QUERY" and body["error"]["details"]["field"] == field


def test_ninety_three_days_is_allowed(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([]))
    end = datetime(2026, 6, 1, tzinfo=UTC)
    start = end - timedelta(days=93)
    resp = client.get(f"/api/agent/usage?from={start.isoformat()}&to={end.isoformat()}".replace("+", "%2B"),
                      headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
