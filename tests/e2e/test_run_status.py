"""A run's status while the model is called (issue 35): ``planning`` during every model call of the
run, not only the first: after a read-only tool, after a side effect run without asking, after an
approval (approved or rejected) resumed the run. What the store holds, ``GET /api/agent/runs/{id}``
and the runs list all say it while the call runs (seed 001 section 5: ``planning`` is the model
deciding, ``executing`` a tool running; docs/firestore-layout.md, "State machines")."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from flask.testing import FlaskClient

from shared.models.base import ModelRequest, ModelResponse, Turn, Usage
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.records import UserRecord
from tests.e2e.conftest import ALICE, Install
from tests.e2e.test_http_approve import pubsub_event, resume_client

__all__ = ["resume_client"]  # the fixture, used below


class Watch:
    """Answers ``turns`` in order; while each call runs, notes the run's status as the store, the run
    view and the runs list show it."""

    def __init__(self, client: FlaskClient, turns: list[Turn]) -> None:
        self.client, self.seen = client, list[tuple[str, str, str]]()
        self.rt: Runtime | None = None
        self.model = ScriptedModel([self._observe(t) for t in turns])

    def _observe(self, turn: Turn) -> Callable[[ModelRequest], ModelResponse]:
        def answer(request: ModelRequest) -> ModelResponse:
            assert self.rt is not None
            (run,) = self.rt.runs.list_runs_for("alice", 10)
            view = self.client.get(f"/api/agent/runs/{run.run_id}", headers=ALICE).get_json()
            (listed,) = self.client.get("/api/agent/runs", headers=ALICE).get_json()["runs"]
            self.seen.append((run.status, view["status"], listed["status"]))
            return ModelResponse(turn=turn, usage=Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2))
        return answer


PLANNING = ("planning", "planning", "planning")


@pytest.mark.parametrize("route", ["/api/agent/run", "/api/agent/run/stream"])
@pytest.mark.parametrize("trust", ["supervised", "autonomous"])
def test_every_model_call_of_a_run_says_planning(install: Install, client: FlaskClient, trust: str,
                                                 route: str) -> None:
    watch = Watch(client, [calls_turn(call("search_memory", {"query": "tea"})),
                           calls_turn(call("save_memory", {"text": "Alice likes tea"}),
                                      call("search_memory", {"query": "tea"})),
                           text_turn("Saved.")])
    watch.rt = install(watch.model)
    if trust == "autonomous":  # the side effect runs without asking: three calls in one invocation
        watch.rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
    resp = client.post(route, json={"prompt": "remember tea"}, headers=ALICE)
    lines = resp.get_data(as_text=True).splitlines()
    body = resp.get_json() if route.endswith("/run") else json.loads(lines[-1])["result"]
    expected = "completed" if trust == "autonomous" else "awaiting_confirmation"
    assert body["status"] == expected
    assert watch.seen == [PLANNING] * (3 if trust == "autonomous" else 2)


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_the_model_call_after_a_decision_says_planning(install: Install, client: FlaskClient,
                                                       resume_client: FlaskClient, decision: str) -> None:
    watch = Watch(client, [calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Done.")])
    rt = watch.rt = install(watch.model)
    body = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers=ALICE).get_json()
    assert body["status"] == "awaiting_confirmation" and watch.seen == [PLANNING]
    assert client.post("/api/agent/approve", json={"approvalId": body["approval"]["approvalId"],
                                                   "decision": decision}, headers=ALICE).status_code == 202
    (msg,) = rt.dispatcher.take()  # type: ignore[attr-defined]
    headers, data = pubsub_event(msg.encode())
    assert resume_client.post("/", headers=headers, data=data).status_code == 200
    assert client.get(f"/api/agent/runs/{body['runId']}", headers=ALICE).get_json()["status"] == "completed"
    assert watch.seen == [PLANNING, PLANNING]
