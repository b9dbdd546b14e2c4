"""What a resume reads (issue 33): the paused turn by name, with the run, in one round trip.

A pause names the actions its resume needs on the run (``pausedActionIds``); the decision's resume
message repeats them with the run's turn count (``WorkMessage.paused``), so the resume reads the
run, the user, the stamps, those actions and every place a turn document may have in one
``get_many``, then claims. Every shortcut is checked against the run it read, and each older or
inconsistent shape falls back to reading more (never to a wrong resume): a run paused by older code
(no ``pausedActionIds``), a message from older code (no hint), a hint that no longer matches the
run, turn documents that are not as the run's count says. On both stores, counted by the bench's
counting wrapper; the tool's executions are counted by the test's ledger (exactly once).
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.instrument import InstrumentedStore
from shared.api import RunRequest
from shared.durable.dispatcher import PubSubDispatcher, RecordingDispatcher
from shared.durable.messages import (
    PAUSED_MAX_CHARS,
    PAUSED_MAX_TURNS,
    WorkMessage,
    decode_pubsub_data,
    paused_hint,
)
from shared.models.base import ModelRequest, ModelResponse
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state import paths
from shared.state.docstore import DocStore, Write
from shared.token_usage import Usage
from tests.agent.conftest import make_settings
from tests.agent.test_approvals import Ledger, approve, dispatcher, registry_with
from tests.agent.test_loop import start_and_drive


def counted_runtime(store: DocStore, model: ScriptedModel, ledger: Ledger, **settings: Any
                    ) -> tuple[Runtime, InstrumentedStore]:
    counted = InstrumentedStore(store)
    rt = Runtime(make_settings(**settings), store=counted, model=model, dispatcher=RecordingDispatcher())
    rt.registry = registry_with(ledger)
    rt.services.registry = rt.registry
    return rt, counted


def paused_run(store: DocStore, *after: Any, calls: list[Any] | None = None, before: list[Any] | None = None,
               **settings: Any) -> tuple[Runtime, InstrumentedStore, ScriptedModel, Ledger, Any]:
    """A run paused on ``calls`` (default: a note to bob), after the model turns ``before``; the
    model then answers ``after``."""
    ledger = Ledger()
    first = calls_turn(*(calls or [call("send_note", {"to": "bob", "body": "hi"})]))
    model = ScriptedModel([*(before or []), first, *after])
    rt, counted = counted_runtime(store, model, ledger, **settings)
    result, _ = start_and_drive(rt, "send bob a note")
    assert result.status == "awaiting_confirmation"
    return rt, counted, model, ledger, result


def handle(rt: Runtime, counted: InstrumentedStore, message: WorkMessage) -> list[str]:
    """Handle ``message`` as the resume function would; the round trips it made, in order."""
    trips = counted.record_trips()
    rt.router.handle(message)
    out = list(trips)
    counted._stats.trips = None
    return out


def until_side_effect(trips: list[str]) -> list[str]:
    """The round trips before the claim of the approved side effect (the first commit) and it."""
    first_commit = next(i for i, t in enumerate(trips) if t.startswith("commit"))
    return trips[:first_commit + 1]


def completed(rt: Runtime, run_id: str) -> bool:
    snap = rt.runs.get_run(run_id)
    return snap is not None and snap.run.status == "completed"


def test_a_pause_names_what_its_resume_reads_and_the_resume_reads_it_with_the_run(store: DocStore) -> None:
    rt, counted, model, ledger, result = paused_run(store, text_turn("Sent."))
    doc = rt.store.get(paths.run(result.run_id))
    assert doc is not None
    (action,) = rt.runs.list_actions(result.run_id)
    assert doc.data["pausedActionIds"] == [action.action_id]
    approve(rt, result.approval.id)
    (message,) = dispatcher(rt).take()
    assert message.paused == f"{doc.data['turnCount']}:{action.action_id}"
    trips = handle(rt, counted, message)
    first, claim = until_side_effect(trips)
    assert first.startswith(f"get_many {paths.run(result.run_id)} ") and paths.action(result.run_id,
                                                                                     action.action_id) in first
    assert claim == "commit actions audit events outbox runs"
    assert not any(t.startswith("query") for t in trips), trips
    assert ledger.calls == ["send_note:bob:hi"] and completed(rt, result.run_id)
    done = rt.store.get(paths.run(result.run_id))
    assert done is not None and "pausedActionIds" not in done.data  # named while paused only
    # The model heard the whole conversation: the prompt, its call and the call's response.
    assert [t.role for t in model.requests[1].turns] == ["user", "model", "user"]
    model.assert_complete()


def test_a_run_paused_by_older_code_resumes_by_querying(store: DocStore) -> None:
    """A run paused before ``pausedActionIds`` existed (so its decision's message has no hint
    either) resumes as before: its actions and turns queried, the tool run once."""
    rt, counted, model, ledger, result = paused_run(store, text_turn("Sent."))
    doc = rt.store.get(paths.run(result.run_id))
    assert doc is not None
    rt.store.commit([Write("set", doc.path, {k: v for k, v in doc.data.items() if k != "pausedActionIds"})])
    approve(rt, result.approval.id)
    (message,) = dispatcher(rt).take()
    assert message.paused is None
    trips = handle(rt, counted, message)
    assert [t.split(" ")[0] for t in until_side_effect(trips)] == ["get_many", "query", "query", "commit"], trips
    assert ledger.calls == ["send_note:bob:hi"] and completed(rt, result.run_id)
    assert [t.role for t in model.requests[1].turns] == ["user", "model", "user"]


@pytest.mark.parametrize("hint", [None, "1:act_elsewhere", "9:", "0:"])
def test_a_message_without_a_matching_hint_reads_what_the_run_names_in_one_more_round_trip(
        store: DocStore, hint: str | None) -> None:
    """A decision made by older code publishes no hint (or Pub/Sub lost the attribute), and a hint
    is checked against the run read with it (naming other actions or another turn count): the run
    names its paused turn, read by id in one ``get_many`` after it (no query), the resume the same."""
    rt, counted, model, ledger, result = paused_run(store, text_turn("Sent."))
    approve(rt, result.approval.id)
    (message,) = dispatcher(rt).take()
    trips = handle(rt, counted, message.model_copy(update={"paused": hint}))
    assert [t.split(" ")[0] for t in until_side_effect(trips)] == ["get_many", "get_many", "commit"], trips
    assert ledger.calls == ["send_note:bob:hi"] and completed(rt, result.run_id)
    assert [t.role for t in model.requests[1].turns] == ["user", "model", "user"]


def test_turn_documents_not_as_the_runs_count_says_are_queried(store: DocStore) -> None:
    """A turn count behind the documents (a layout this code did not write) fails the chain check:
    the turns and actions are queried, and the model still hears the whole conversation."""
    rt, counted, model, ledger, result = paused_run(store, text_turn("Sent."))
    doc = rt.store.get(paths.run(result.run_id))
    assert doc is not None and doc.data["turnCount"] == 2
    rt.store.commit([Write("set", doc.path, {**doc.data, "turnCount": 1})])
    approve(rt, result.approval.id)
    (message,) = dispatcher(rt).take()
    trips = handle(rt, counted, message)
    assert [t.split(" ")[0] for t in until_side_effect(trips)] == ["get_many", "query", "query", "commit"], trips
    assert ledger.calls == ["send_note:bob:hi"] and completed(rt, result.run_id)
    assert [t.role for t in model.requests[1].turns] == ["user", "model", "user"]


def test_a_turn_with_several_calls_is_named_whole(store: DocStore) -> None:
    """A read-only call answered before the pause and two calls waiting: all three are named; the
    first decision's resume finds the second still open and waits; the second's runs the approved
    call once and answers all three in order."""
    calls = [call("search_memory", {"query": "bob"}), call("send_note", {"to": "bob", "body": "1"}),
             call("send_note", {"to": "carol", "body": "2"})]
    rt, counted, model, ledger, result = paused_run(store, text_turn("Both handled."), calls=calls)
    actions = rt.runs.list_actions(result.run_id)
    doc = rt.store.get(paths.run(result.run_id))
    assert doc is not None and doc.data["pausedActionIds"] == [a.action_id for a in actions]
    assert result.approvals is not None
    approve(rt, result.approvals[0].id)
    (first,) = dispatcher(rt).take()
    waiting = handle(rt, counted, first)  # one read, then the handled message's outbox entry removed
    assert waiting[0].startswith("get_many") and waiting[1:] == [
        f"get {paths.outbox(first.approvalId or '')}", "commit outbox"], waiting
    approve(rt, result.approvals[1].id, "reject")
    (second,) = dispatcher(rt).take()
    trips = handle(rt, counted, second)
    assert not any(t.startswith("query") for t in trips), trips
    assert ledger.calls == ["send_note:bob:1"] and completed(rt, result.run_id)
    responses = [p.function_response for p in model.requests[1].turns[-1].parts]
    assert [r.name for r in responses if r is not None] == ["search_memory", "send_note", "send_note"]


def test_a_budget_pause_and_the_turn_it_let_through_are_named(store: DocStore) -> None:
    """A budget approval's action sits at the turn index the next model turn takes (and then shares
    it with that turn's calls): it is named, approving it calls the model with nothing queried, and
    the tool approval of the turn it let through is resumed by name too (the budget's action named
    with it, not taken for one of its calls)."""
    ledger = Ledger()

    def answer(request: ModelRequest) -> ModelResponse:
        done = any(p.function_response is not None for p in request.turns[-1].parts)
        turn = text_turn("Sent.") if done else calls_turn(call("send_note", {"to": "bob", "body": "hi"}))
        return ModelResponse(turn=turn, finish_reason="STOP", usage=Usage(requests=1, input_tokens=100,
                                                                          output_tokens=20, total_tokens=120))

    counted = InstrumentedStore(store)
    rt = Runtime(make_settings(model_max_output_tokens=200), store=counted,
                 model=FunctionModel(answer, name="gemini-3-flash-preview"), dispatcher=RecordingDispatcher())
    rt.registry = registry_with(ledger)
    rt.services.registry = rt.registry
    started = rt.agent.start("alice", RunRequest(prompt="send bob a note", budgetUsd=1e-7))
    result = rt.agent.run(rt.agent.context(started))
    assert result.status == "awaiting_confirmation" and result.approval is not None
    (budget,) = rt.runs.list_actions(result.run_id)
    doc = rt.store.get(paths.run(result.run_id))
    assert doc is not None and doc.data["pausedActionIds"] == [budget.action_id]
    approve(rt, result.approval.id)
    (message,) = dispatcher(rt).take()
    trips = handle(rt, counted, message)
    assert not any(t.startswith("query") for t in trips), trips
    (tool,) = rt.runs.list_approvals_for("alice", "pending", 10)
    assert tool.tool == "send_note"
    doc = rt.store.get(paths.run(result.run_id))
    assert doc is not None and doc.data["pausedActionIds"] == [budget.action_id, tool.action_id]
    approve(rt, tool.approval_id)
    (message,) = dispatcher(rt).take()
    trips = handle(rt, counted, message)
    assert not any(t.startswith("query") for t in trips), trips
    assert ledger.calls == ["send_note:bob:hi"]
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.error is None, snap.run.error


def test_the_hint_travels_as_a_pubsub_attribute_and_a_bad_one_is_ignored() -> None:
    """The hint is an attribute (a runtime older than it ignores attributes it does not know),
    never in the body; a malformed or oversized one is dropped, not the message."""
    message = WorkMessage(kind="resume", unitId="run_1", uid="alice", approvalId="apr_1", paused="3:act_a,act_b")
    assert b"paused" not in message.encode()
    assert message.paused_reads == (3, ["act_a", "act_b"])
    assert WorkMessage(paused=f"{PAUSED_MAX_TURNS + 1}:act_a").paused_reads is None  # not followed: too many turns

    class Publisher:
        def __init__(self) -> None:
            self.sent: list[tuple[bytes, dict[str, str]]] = []

        def topic_path(self, project: str, topic: str) -> str:
            return f"projects/{project}/topics/{topic}"

        def publish(self, topic: str, data: bytes, **attributes: str) -> Any:
            self.sent.append((data, attributes))

            class Done:
                def result(self, timeout: float) -> None:
                    return None

            return Done()

    publisher = Publisher()
    pubsub = PubSubDispatcher.__new__(PubSubDispatcher)
    pubsub._client, pubsub._topic, pubsub._timeout_s = publisher, "projects/p/topics/t", 1.0
    pubsub.publish(message)
    ((data, attributes),) = publisher.sent
    assert attributes == {"kind": "resume", "paused": "3:act_a,act_b"}

    import base64

    def event(attrs: dict[str, str]) -> dict[str, Any]:
        return {"message": {"data": base64.b64encode(data).decode(), "attributes": attrs}}

    assert decode_pubsub_data(event(attributes)).paused_reads == (3, ["act_a", "act_b"])
    for bad in ("x:act_a", "3:act a", "3", "3:" + "a" * PAUSED_MAX_CHARS):
        got = decode_pubsub_data(event({"paused": bad}))
        assert got.paused is None and got.unitId == "run_1"
    assert paused_hint(2, None) is None and paused_hint(2, []) == "2:"
    assert paused_hint(2, ["a" * 160] * 8) is None  # longer than an attribute holds: no hint
