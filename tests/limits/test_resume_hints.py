"""Every resume reads what it works from by name, with the run, in one round trip (issue 33, 33o).

The approve path's resume message names the paused run's turn count and actions (``paused``, 33d).
So do the other ways a run is taken up again: a plan's ``continue`` messages (its confirmation and
its yields), the sweep's recovery of a run whose lease expired (named by what its query read of the
run) and a plan parent's ``resume`` (named by what the plan's end read of the parent). Each hint is
checked against the run read with it: a missing or stale one costs one read more, never a wrong
resume; a run cut off inside a step (its last model turn's calls unanswered) queries its open
actions. A resumed invocation's ``status`` event rides on its claim (no commit of its own). On both
stores, counted by the bench's counting wrapper; acts and tools counted by the tests' own records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from bench.instrument import InstrumentedStore
from shared.durable.dispatcher import RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.loop.resume import recover_runs
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.state import paths
from shared.state.docstore import DocStore
from shared.state.records import UserRecord
from tests.agent.conftest import install
from tests.agent.test_approvals import Crash as ApprovalCrash
from tests.agent.test_approvals import approve, dispatcher
from tests.agent.test_resume_reads import paused_run
from tests.limits.conftest import ALICE, OFF
from tests.limits.test_round_trips import TO_RESUME
from tests.plans.support import Script
from tests.plans.test_sessions_durability import Crash, crashing_note
from tests.plans.test_sessions_http import create

ACTS = {"Read the notes": [("search_memory", {"query": "a"}), ("search_memory", {"query": "b"})],
        "Write the summary": [("search_memory", {"query": "c"})]}
CLAIM = "commit events outbox runs"
"""A resumed invocation's claim: the run, the consumed outbox entry and its ``status`` event."""
TO_FIRST_MODEL_CALL = 2
"""A plan invocation (a ``continue`` message) to its first model call: one get_many, the claim."""
RECOVERY_TO_MODEL_CALL = 2
"""The sweep's recovery, after its query of expired leases, to the recovered run's next model call:
one get_many, the claim."""
CUT_OFF_RECOVERY = 3
"""The same for a run cut off inside a step: its open actions queried before the claim."""


class Counted:
    """A runtime over the counting store; the round trips made before each model call."""

    def __init__(self, store: DocStore, answer: Callable[[ModelRequest], Turn], **settings: Any) -> None:
        self.counted = InstrumentedStore(store)
        self.at_model_calls: list[int] = []

        def noted(request: ModelRequest) -> Turn:
            self.at_model_calls.append(self.counted.snapshot()["round_trips"])
            return answer(request)

        self.rt = install(self.counted, FunctionModel(noted, name="gemini-3-flash-preview"), **{**OFF, **settings})

    def count(self) -> int:
        return int(self.counted.snapshot()["round_trips"])

    def handle(self, message: WorkMessage) -> tuple[list[str], int | None]:
        """``message`` handled; its round trips, and how many came before its first model call."""
        trips = self.counted.record_trips()
        before, calls = self.count(), len(self.at_model_calls)
        self.rt.router.handle(message)
        first = self.at_model_calls[calls] - before if len(self.at_model_calls) > calls else None
        return list(trips), first

    def deliver(self) -> list[tuple[WorkMessage, list[str], int | None]]:
        """Every published message delivered until none is left, each with :meth:`handle`'s answer."""
        d = self.rt.dispatcher
        assert isinstance(d, RecordingDispatcher)
        out = []
        while msgs := d.take():
            for m in msgs:
                out.append((m, *self.handle(m)))
        return out

    def recover(self) -> tuple[list[str], int | None]:
        """The sweep's recovery of runs whose lease expired; as :meth:`handle`."""
        trips = self.counted.record_trips()
        before, calls = self.count(), len(self.at_model_calls)
        assert recover_runs(self.rt.services, 50) == 1
        first = self.at_model_calls[calls] - before if len(self.at_model_calls) > calls else None
        return list(trips), first


def _own(trips: list[str], first: int | None) -> list[str]:
    """The round trips before the first model call, but for the queries of the user's tool list (a
    user not stamped yet: once, shared/state/users_repo.py) and the sweep's own query of expired
    leases (one per status it recovers)."""
    assert first is not None, trips
    return [t for t in trips[:first] if not t.startswith("query users/alice/") and t != "query runs"]


def crashed_then_recovered(c: Counted, client: FlaskClient) -> tuple[str, str, list[str], int | None]:
    """A session confirmed, its execution dying (``Crash``); once its lease (0.2 s) lapsed, the
    sweep's recovery: the session's and run's ids, and :meth:`Counted.recover`'s answer."""
    sid = _confirmed(client)
    with pytest.raises(Crash):
        c.deliver()
    time.sleep(0.3)
    trips, first = c.recover()
    return sid, _session(client, sid)["runId"], trips, first


def _confirmed(client: FlaskClient) -> str:
    created = create(client)
    sid: str = created["sessionId"]
    resp = client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": created["plan"]["version"]},
                       headers=ALICE)
    assert resp.status_code == 202, resp.get_json()
    return sid


def _run_doc(store: DocStore, run_id: str) -> dict[str, Any]:
    doc = store.get(paths.run(run_id))
    assert doc is not None
    return doc.data


def _session(client: FlaskClient, sid: str) -> dict[str, Any]:
    view: dict[str, Any] = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    return view


def test_plan_continue_messages_name_the_turns_and_each_invocation_reads_them_with_the_run(
        store: DocStore, client: FlaskClient) -> None:
    """The confirmation's and every yield's ``continue`` message names the run's turn count; each
    invocation reads run, user, stamps and turn documents in one get_many, and its claim (with its
    status event) is its only other round trip before its first model call: no query of the run's
    actions or turns, no commit of a status event of its own."""
    c = Counted(store, Script(acts=ACTS).answer, plan_steps_per_invocation=2)
    sid = _confirmed(client)
    run_id = _session(client, sid)["runId"]
    d = c.rt.dispatcher
    assert isinstance(d, RecordingDispatcher)
    handled = []
    while msgs := d.take():
        for m in msgs:
            assert m.kind == "continue" and m.paused == f"{_run_doc(store, run_id)['turnCount']}:", m
            handled.append((m, *c.handle(m)))
    assert len(handled) >= 3, "the confirmation and at least two yields"
    for i, (_, trips, first) in enumerate(handled):
        # The user's tool list: queried once (a user not stamped yet), then known from the stamps.
        assert len(_own(trips, first)) == TO_FIRST_MODEL_CALL if i == 0 else first == TO_FIRST_MODEL_CALL, trips
        read, claim = _own(trips, first)
        assert read.startswith(f"get_many {paths.run(run_id)} users/alice ") and "/turns/" in read, read
        assert claim == CLAIM, trips
        assert not [t for t in trips if t.startswith(f"query {paths.run(run_id)}/")], trips
    assert _session(client, sid)["status"] == "completed"
    for task in _session(client, sid)["plan"]["tasks"]:
        ns = [h["n"] for h in task["history"]]
        assert ns == list(range(1, len(ns) + 1)), task  # every act once: no gap, no duplicate


@pytest.mark.parametrize(("hint", "more"), [(None, 1), ("0:", 1), ("40:", 0)], ids=["older-code", "stale", "wider"])
def test_a_continue_message_without_a_matching_hint_costs_one_read_more(
        store: DocStore, client: FlaskClient, hint: str | None, more: int) -> None:
    """No hint (a message of older code), or one naming fewer turns than the run has: the run names
    what to read, read in one get_many more. One naming more turns: the documents it names hold all
    the run needs (the run's own count decides which are its turns)."""
    c = Counted(store, Script(acts=ACTS).answer, plan_steps_per_invocation=2)
    sid = _confirmed(client)
    d = c.rt.dispatcher
    assert isinstance(d, RecordingDispatcher)
    (message,) = d.take()
    assert message.paused == "1:"
    message.paused = hint
    trips, first = c.handle(message)
    own = _own(trips, first)
    assert len(own) == TO_FIRST_MODEL_CALL + more, trips
    assert [t.split(" ")[0] for t in own] == ["get_many"] * (1 + more) + ["commit"], trips
    assert "/turns/" in own[-2] and own[-1] == CLAIM, trips
    c.deliver()
    assert _session(client, sid)["status"] == "completed"


def _crash_at(script: Script, call_number: int) -> None:
    original = script.answer
    state = {"calls": 0}

    def crashing(request: Any) -> Any:
        state["calls"] += 1
        if state["calls"] == call_number:
            raise Crash()
        return original(request)

    script.answer = crashing  # type: ignore[method-assign]


def test_the_sweep_recovers_a_run_reading_what_its_query_read_of_it_names(store: DocStore,
                                                                         client: FlaskClient) -> None:
    """An invocation dies in a model call after its first act was committed. The sweep's query of
    expired leases read the run: its turn count names the turn documents, read with the run, its
    user and stamps in one get_many; then the claim, then the model call that died is made again.
    Every act once."""
    script = Script(acts=ACTS)
    _crash_at(script, 4)  # the second act's call (after planning... the first act and its reflection)
    c = Counted(store, lambda r: script.answer(r), lease_ttl_s=0.2)
    sid, run_id, trips, first = crashed_then_recovered(c, client)
    assert trips[0] == "query runs", trips  # the sweep's: runs whose lease expired
    own = _own(trips, first)
    assert len(own) == RECOVERY_TO_MODEL_CALL, trips
    read, claim = own
    assert read.startswith(f"get_many {paths.run(run_id)} users/alice ") and "/turns/" in read, read
    assert claim == CLAIM, trips
    assert not [t for t in trips if t.startswith(f"query {paths.run(run_id)}/")], trips
    c.deliver()
    done = _session(client, sid)
    assert done["status"] == "completed"
    ns = [h["n"] for h in done["plan"]["tasks"][0]["history"]]
    assert ns == sorted(set(ns)) == list(range(1, len(ns) + 1))  # no gap, no duplicate


def test_a_run_cut_off_inside_a_step_queries_its_open_actions(store: DocStore, client: FlaskClient) -> None:
    """The process dies inside a side-effect tool (its claim committed with the model turn that
    called it): the run names no actions, so the recovery reads its turns by name and queries its
    open actions (the unanswered turn's), never running the tool again."""
    sent: list[str] = []
    script = Script(acts={"Read the notes": [("send_note", {"to": "bob"})]})
    c = Counted(store, script.answer, lease_ttl_s=0.2)
    c.rt.registry = c.rt.services.registry = crashing_note(sent)
    c.rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
    sid, run_id, trips, first = crashed_then_recovered(c, client)
    own = _own(trips, first)
    assert len(own) == CUT_OFF_RECOVERY, trips
    assert [t.split(" ")[0] for t in own] == ["get_many", "query", "commit"], trips
    assert "/turns/" in own[0] and own[1] == f"query {paths.run(run_id)}/actions", trips
    c.deliver()
    assert sent == ["bob"]
    assert _session(client, sid)["status"] == "completed"


def test_a_plan_parents_resume_reads_by_name(store: DocStore, client: FlaskClient) -> None:
    """A chat run that started a plan waits on it; the plan's end names the parent's turn count and
    paused actions in its ``resume`` message, so the parent's resume reads them with the run in one
    get_many: no query of the parent's actions or turns."""

    def after(request: ModelRequest) -> Turn:
        return text_turn("The plan is done.")

    chat: list[Any] = [calls_turn(call("agent_create_plan", {"objective": "Summarise my notes"})), after]
    script = Script(acts={"Read the notes": [("search_memory", {"query": "notes"})]})

    def answer(request: ModelRequest) -> Turn:
        if "[CONTEXT:" in request.system_instruction:
            item = chat.pop(0)
            return item(request) if callable(item) else item  # type: ignore[no-any-return]
        return script.answer(request)

    c = Counted(store, answer)
    resp = client.post("/api/agent/run", json={"prompt": "summarise my notes, step by step"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    parent = resp.get_json()["runId"]
    handled = c.deliver()
    resumes = [(m, trips, first) for m, trips, first in handled if m.unitId == parent]
    assert len(resumes) == 1, [m for m, _, _ in handled]
    message, trips, first = resumes[0]
    # Paused after two turns (the prompt, the model's call), waiting on that call's action.
    assert message.kind == "resume" and message.paused is not None, message
    count, _, action_id = message.paused.partition(":")
    assert count == "2" and action_id.startswith("act_"), message
    read = trips[0]
    assert read.startswith(f"get_many {paths.run(parent)} users/alice ") and \
        paths.action(parent, action_id) in read and paths.turn(parent, 2) in read, read
    assert not [t for t in trips if t.startswith(f"query {paths.run(parent)}/actions")
                or t.startswith(f"query {paths.run(parent)}/turns")], trips
    # Its claim removed the plan's wake-up entry: the router does not read it back.
    assert message.entryId is not None and not [t for t in trips if t.startswith("get outbox/")], trips
    assert store.get(paths.outbox(message.entryId)) is None
    assert _run_doc(store, parent)["status"] == "completed"
    assert first is not None


def test_a_resume_cut_off_inside_its_approved_call_is_recovered_by_the_names_its_pause_left(
        store: DocStore) -> None:
    """The approved side effect ran and the process died before its result was committed (the
    resume's claim and the call's were one commit). The run, ``executing`` now, still names its
    paused turn's actions: the sweep's recovery reads them by name with its turns (no query), records
    the call's outcome ``unknown`` (never run again) and the model hears it."""
    rt, counted, model, ledger, result = paused_run(store, text_turn("Noted."), lease_ttl_s=0.2)
    run_id = result.run_id
    approve(rt, result.approval.id)
    (message,) = dispatcher(rt).take()
    ledger.crash_next = True
    with pytest.raises(ApprovalCrash):
        rt.router.handle(message)
    cut = _run_doc(store, run_id)
    assert cut["status"] == "executing" and cut["pausedActionIds"], cut
    time.sleep(0.3)
    trips = counted.record_trips()
    assert recover_runs(rt.services, 50) == 1
    own = [t for t in trips if t != "query runs"]
    read, claim = own[:2]
    assert read.startswith(f"get_many {paths.run(run_id)} ") and "/actions/" in read and "/turns/" in read, trips
    assert claim.startswith("commit ") and " runs" in claim, trips
    assert not [t for t in trips if t.startswith(f"query {paths.run(run_id)}/")], trips
    assert ledger.calls == ["send_note:bob:hi"]  # once: cut off, never repeated
    (action,) = rt.runs.list_actions(run_id)
    assert action.outcome == "unknown"
    assert _run_doc(store, run_id)["status"] == "completed"
    model.assert_complete()


def test_a_decisions_message_whose_entry_the_claim_removed_is_not_read_back(store: DocStore) -> None:
    """The claim of a resumed run removes the outbox entries of its paused turn's decisions: the
    router does not read the decision's entry again once the message is handled (one round trip
    less per resume). A decision that leaves the run waiting keeps the read (nothing removed it)."""
    rt, counted, _, ledger, result = paused_run(store, text_turn("Sent."))
    approve(rt, result.approval.id)
    (message,) = dispatcher(rt).take()
    trips = counted.record_trips()
    rt.router.handle(message)
    assert not [t for t in trips if t.startswith("get outbox/")], trips
    assert store.get(f"outbox/{result.approval.id}") is None
    assert ledger.calls == ["send_note:bob:hi"] and _run_doc(store, result.run_id)["status"] == "completed"

    rt, counted, _, ledger, result = paused_run(store, text_turn("Sent."), calls=[
        call("send_note", {"to": "bob", "body": "one"}), call("send_note", {"to": "ann", "body": "two"})])
    first, _ = rt.runs.get_run(result.run_id).run.pending_approval_ids  # type: ignore[union-attr]
    approve(rt, first)
    (message,) = dispatcher(rt).take()
    trips = counted.record_trips()
    rt.router.handle(message)  # waits for the second decision
    assert f"get outbox/{first}" in trips and store.get(f"outbox/{first}") is None, trips
    assert ledger.calls == []


LONG = 30
"""Tool steps before the pause in the long conversation below."""


def test_a_long_conversation_resumes_in_as_many_round_trips(store: DocStore) -> None:
    """The pause comes after ``LONG`` tool steps (each step's turns one document): the resume still
    reads them all in its one get_many (more documents, not more round trips) and reaches the
    approved side effect in ``TO_RESUME`` round trips, the model hearing the whole conversation."""
    steps = [calls_turn(call("search_memory", {"query": f"q{i}"})) for i in range(LONG)]
    rt, counted, model, ledger, result = paused_run(store, text_turn("Sent."), before=steps,
                                                    max_loop_steps=LONG + 2, max_tool_calls_per_turn=LONG + 2)
    doc = _run_doc(store, result.run_id)
    assert doc["turnCount"] == 2 * LONG + 2, doc["turnCount"]
    approve(rt, result.approval.id)
    (message,) = dispatcher(rt).take()
    trips = counted.record_trips()
    rt.router.handle(message)
    first, claim = trips[:TO_RESUME]
    assert first.startswith(f"get_many {paths.run(result.run_id)} ") and paths.turn(result.run_id, 2 * LONG) in first
    assert claim == "commit actions audit events outbox runs", trips
    assert not [t for t in trips if t.startswith("query runs/")], trips
    assert ledger.calls == ["send_note:bob:hi"]
    assert len(model.requests[-1].turns) == 2 * LONG + 3  # the prompt, every call and answer, the note's
