"""Approvals, resume and recovery on the real SQLite store (the Firestore runs are in tests/integration)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from shared.api import ApproveRequest, RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.errors import Conflict, Gone, NotFound, ToolError, Unavailable
from shared.loop.resume import resume_run
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state import paths
from shared.state.docstore import DocStore, Query, Transaction, TransactionContention, Write
from shared.state.paths import outbox as outbox_path
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry
from tests.agent.conftest import MakeRuntime
from tests.agent.test_loop import audits, start_and_drive
from tests.leases import LONG_LEASE_S, expire_pause, lapse, overdue
from tests.messages import deliver_published as deliver_all

T = TypeVar("T")


class Crash(BaseException):
    """Simulates the process dying: not an Exception, so nothing in the runtime catches it."""


class Ledger:
    """Counts real executions of the test tools (the side effect we must not duplicate)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.crash_next = False
        self.lock = threading.Lock()

    def execute(self, call: str) -> None:
        """Record one real execution; a ``crash_next`` crashes it (once) after its side effect."""
        with self.lock:
            self.calls.append(call)
            if self.crash_next:
                self.crash_next = False
                raise Crash()


def registry_with(ledger: Ledger) -> ToolRegistry:
    reg = default_registry()

    @reg.tool(side_effect=True)
    def send_note(ctx: ToolContext, to: str, body: str) -> dict[str, Any]:
        """Send a note to someone.

        Args:
            to: Recipient.
            body: Text.
        """
        ledger.execute(f"send_note:{to}:{body}")
        if to == "nobody":
            raise ToolError("no such recipient")
        return {"sent": True}

    @reg.tool(side_effect=True, recipients=lambda a: [a.to])  # type: ignore[attr-defined]
    def mail(ctx: ToolContext, to: str, body: str) -> dict[str, Any]:
        """Mail someone (mail-like: the delegated allowlist applies).

        Args:
            to: Recipient address.
            body: Text.
        """
        ledger.execute(f"mail:{to}:{body}")
        return {"sent": True}

    @reg.tool(side_effect=True, idempotent=True)
    def set_status(ctx: ToolContext, text: str) -> dict[str, Any]:
        """Set the user's status (setting it twice is harmless).

        Args:
            text: The status.
        """
        ledger.execute(f"set_status:{text}")
        return {"status": text}

    return reg


def runtime(make_runtime: MakeRuntime, model: Any, ledger: Ledger, **kw: Any) -> Runtime:
    rt = make_runtime(model, **kw)
    rt.registry = registry_with(ledger)
    rt.services.registry = rt.registry
    return rt


def dispatcher(rt: Runtime) -> RecordingDispatcher:
    d = rt.dispatcher
    assert isinstance(d, RecordingDispatcher)
    return d


def approve(rt: Runtime, approval_id: str, decision: str = "approve", uid: str = "alice") -> Any:
    from shared.agent.approvals import decide

    return decide(rt.services, rt.dispatcher, uid, ApproveRequest(approvalId=approval_id, decision=decision))


def paused(make_runtime: MakeRuntime, ledger: Ledger, *after: Turn, calls: list[Any] | None = None,
           **kw: Any) -> tuple[Runtime, ScriptedModel, Any, list[dict[str, Any]]]:
    first = calls_turn(*(calls or [call("send_note", {"to": "bob", "body": "hi"})]))
    model = ScriptedModel([first, *after])
    rt = runtime(make_runtime, model, ledger, **kw)
    result, live = start_and_drive(rt, "send bob a note")
    assert result.status == "awaiting_confirmation"
    return rt, model, result, live


def test_approve_resume_executes_once_and_completes(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, model, result, live = paused(make_runtime, ledger, text_turn("Sent."))
    decision = approve(rt, result.approval.id)
    assert decision.decision == "approved" and decision.run_id == result.run_id
    entry = rt.store.get(outbox_path(result.approval.id))
    assert entry is not None and entry.data["status"] == "published"  # kept until a resume handles it
    deliver_all(rt, copies=3)  # duplicate deliveries
    assert ledger.calls == ["send_note:bob:hi"]
    assert rt.store.get(outbox_path(result.approval.id)) is None  # handled: removed
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed" and snap.run.result is not None
    assert snap.run.result.mode == "tool_executed" and snap.run.result.summary == "Sent."
    events = rt.runs.list_events(result.run_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[: len(live)] == live
    assert events[-1]["type"] == "result" and events[-1]["result"]["status"] == "completed"
    fr = model.requests[1].turns[-1].parts[0].function_response
    assert fr is not None and fr.response == {"sent": True}
    kinds = [a["kind"] for a in audits(rt)]
    assert kinds.count("approval_decided") == 1 and kinds.count("side_effect_attempt") == 1
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "completed" and action.attempts == 1
    model.assert_complete()


def test_reject_tells_the_model_and_never_runs_the_tool(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, model, result, _ = paused(make_runtime, ledger, text_turn("OK, not sent."))
    approve(rt, result.approval.id, "reject")
    deliver_all(rt)
    assert ledger.calls == []
    fr = model.requests[1].turns[-1].parts[0].function_response
    assert fr is not None and fr.response["rejected"] is True
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "rejected"
    # The stream tells the rejection too, once (docs/event-protocol.md: tool_result status rejected).
    told = [e for e in rt.runs.list_events(result.run_id) if e["type"] == "tool_result"]
    assert [(e["actionId"], e["status"], e["error"]) for e in told] == [
        (action.action_id, "rejected", "rejected by the user")]


def test_concurrent_messages_for_one_approval_run_the_tool_once(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    approve(rt, result.approval.id)
    (msg,) = dispatcher(rt).take()
    threads = [threading.Thread(target=rt.router.handle, args=(msg,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert ledger.calls == ["send_note:bob:hi"]
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"


def test_concurrent_approve_calls_decide_once(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    outcomes: list[str] = []

    def go() -> None:
        try:
            approve(rt, result.approval.id)
            outcomes.append("ok")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert sorted(outcomes) == ["conflict", "conflict", "conflict", "ok"]


class ContendedStore:
    """The real store, except that its next ``times`` transactions give up the way a contended
    store does; before the first one, ``rival`` commits (another approve call winning the race)."""

    def __init__(self, inner: DocStore, rival: Callable[[], Any] | None, times: int = 1) -> None:
        self._inner = inner
        self._rival = rival
        self.times = times

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        if self.times > 0:
            self.times -= 1
            if self._rival is not None:
                rival, self._rival = self._rival, None
                rival()
            raise TransactionContention("transaction gave up after 5 attempts (test)")
        return self._inner.run_transaction(fn)


def contended(rt: Runtime, rival: Callable[[], Any] | None, times: int = 1) -> Runtime:
    store = ContendedStore(rt.store, rival, times)
    twin = Runtime(rt.settings, store=store, model=rt.model, dispatcher=rt.dispatcher,  # type: ignore[arg-type]
                   registry=rt.registry)
    return twin


def test_an_approve_call_that_loses_the_race_answers_409_not_500(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    loser = contended(rt, lambda: approve(rt, result.approval.id))
    with pytest.raises(Conflict) as err:
        approve(loser, result.approval.id, decision="reject")
    assert err.value.code == "ALREADY_DECIDED" and err.value.details is not None
    assert err.value.details["runId"] == result.run_id and err.value.details["decision"] == "approved"
    approval = rt.runs.store.get(paths.approval("alice", result.approval.id))
    assert approval is not None and approval.data["status"] == "approved"  # the winner's decision stands
    deliver_all(rt)
    assert ledger.calls == ["send_note:bob:hi"]


def test_a_contended_approve_call_without_a_winner_tries_again(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    loser = contended(rt, None, times=2)
    assert approve(loser, result.approval.id).decision == "approved"  # third try went through
    deliver_all(rt)
    assert ledger.calls == ["send_note:bob:hi"]


def test_an_approve_call_contended_on_every_try_answers_503(make_runtime: MakeRuntime) -> None:
    from shared.agent.approvals import CONTENTION_ATTEMPTS

    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    loser = contended(rt, None, times=CONTENTION_ATTEMPTS)
    with pytest.raises(Unavailable) as err:
        approve(loser, result.approval.id)
    assert err.value.code == "CONTENTION"  # Unavailable: 503 at the edge
    approval = rt.runs.store.get(paths.approval("alice", result.approval.id))
    assert approval is not None and approval.data["status"] == "pending"  # nothing half-written
    assert dispatcher(rt).take() == []
    assert approve(rt, result.approval.id).decision == "approved"  # a retry goes through


def crashed_after_sending(make_runtime: MakeRuntime) -> tuple[Runtime, ScriptedModel, Any, Ledger]:
    """A run paused on ``send_note``, approved; the invocation that resumes it crashes inside the
    tool after the note was sent (its lease, a long one, still held)."""
    ledger = Ledger()
    rt, model, result, _ = paused(make_runtime, ledger, text_turn("I am not sure it was sent."),
                                  lease_ttl_s=LONG_LEASE_S)
    approve(rt, result.approval.id)
    ledger.crash_next = True
    with pytest.raises(Crash):
        deliver_all(rt)
    return rt, model, result, ledger


def test_crash_inside_a_tool_leaves_outcome_unknown_and_never_reruns(make_runtime: MakeRuntime) -> None:
    rt, model, result, ledger = crashed_after_sending(make_runtime)
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "executing"
    deliver_all_again = resume_run(rt.services, result.run_id)
    assert deliver_all_again == "busy"  # the lease is still live
    lapse(rt.runs, result.run_id)  # the crashed invocation's lease runs out
    assert rt.router.sweep()["recovered"] == 1
    assert ledger.calls == ["send_note:bob:hi"]  # not re-run
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "failed" and action.outcome == "unknown"
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response["outcome"] == "unknown"
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    assert any(e["type"] == "tool_result" and "unknown" in (e.get("error") or "")
               for e in rt.runs.list_events(result.run_id))


def test_idempotent_tool_is_retried_after_a_crash(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Done."), lease_ttl_s=LONG_LEASE_S,
                              calls=[call("set_status", {"text": "away"})])
    approve(rt, result.approval.id)
    ledger.crash_next = True
    with pytest.raises(Crash):
        deliver_all(rt)
    assert rt.router.sweep()["recovered"] == 0  # the crashed invocation's lease is still held
    lapse(rt.runs, result.run_id)
    assert rt.router.sweep()["recovered"] == 1
    assert ledger.calls == ["set_status:away", "set_status:away"]
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "completed"


def test_parallel_calls_resume_only_when_every_approval_is_decided(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    calls = [call("search_memory", {"query": "bob"}), call("send_note", {"to": "bob", "body": "1"}),
             call("send_note", {"to": "carol", "body": "2"})]
    rt, model, result, _ = paused(make_runtime, ledger, text_turn("Both handled."), calls=calls)
    assert result.approvals is not None and len(result.approvals) == 2
    actions = rt.runs.list_actions(result.run_id)
    assert [a.status for a in actions] == ["completed", "awaiting_confirmation", "awaiting_confirmation"]
    approve(rt, result.approvals[0].id)
    deliver_all(rt)
    assert ledger.calls == [] and model.remaining == 1  # still waiting for the second decision
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "awaiting_confirmation"
    approve(rt, result.approvals[1].id, "reject")
    deliver_all(rt)
    assert ledger.calls == ["send_note:bob:1"]
    responses = model.requests[1].turns[-1].parts
    assert [p.function_response.name for p in responses if p.function_response] == [
        "search_memory", "send_note", "send_note"]
    assert [p.function_response.id for p in responses if p.function_response] == [
        c.function_call.id for c in calls]
    assert responses[2].function_response is not None and responses[2].function_response.response["rejected"]


def test_a_rejection_is_told_once_even_when_a_crash_cuts_the_turn_after_it(make_runtime: MakeRuntime) -> None:
    """Reject the first of two calls, approve the second, crash inside the second: the turn is
    closed again by the recovery, and the rejection's tool_result is still stored exactly once
    (make reliability found it twice when it was told before the second call's claim commit)."""
    ledger = Ledger()
    calls = [call("send_note", {"to": "bob", "body": "1"}), call("send_note", {"to": "carol", "body": "2"})]
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Handled."), calls=calls, lease_ttl_s=LONG_LEASE_S)
    assert result.approvals is not None
    approve(rt, result.approvals[0].id, "reject")
    approve(rt, result.approvals[1].id)
    ledger.crash_next = True
    with pytest.raises(Crash):
        deliver_all(rt)
    lapse(rt.runs, result.run_id)  # the crashed invocation's lease runs out
    assert rt.router.sweep()["recovered"] == 1
    rejected, cut_off = rt.runs.list_actions(result.run_id)
    told = [(e["actionId"], e["status"]) for e in rt.runs.list_events(result.run_id) if e["type"] == "tool_result"]
    assert sorted(told) == sorted([(rejected.action_id, "rejected"), (cut_off.action_id, "failed")])
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"


def test_a_run_pauses_and_resumes_several_times(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, calls_turn(call("send_note", {"to": "carol", "body": "2"})),
                              text_turn("All sent."))
    approve(rt, result.approval.id)
    deliver_all(rt)
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "awaiting_confirmation" and snap.run.result is not None
    second = snap.run.result.approval
    assert second is not None and second.id != result.approval.id
    approve(rt, second.id)
    deliver_all(rt)
    assert ledger.calls == ["send_note:bob:hi", "send_note:carol:2"]
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    events = rt.runs.list_events(result.run_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


def test_approval_errors(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    with pytest.raises(NotFound):
        approve(rt, "apr_doesnotexist")
    with pytest.raises(NotFound):
        approve(rt, result.approval.id, uid="mallory")
    approve(rt, result.approval.id)
    with pytest.raises(Conflict) as replay:
        approve(rt, result.approval.id)
    assert replay.value.code == "ALREADY_DECIDED"


def test_expired_approval_is_gone_and_rejected(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("It expired."), approval_ttl_s=0.0)
    with pytest.raises(Gone):
        approve(rt, result.approval.id)
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "rejected" and "expired" in (action.error or "")
    with pytest.raises(Gone):
        approve(rt, result.approval.id)
    deliver_all(rt)
    assert ledger.calls == []
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"


class FailingDispatcher(RecordingDispatcher):
    def publish(self, message: WorkMessage) -> None:
        raise ConnectionError("pubsub unavailable")


def test_crash_between_commit_and_publish_is_recovered_by_the_outbox(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    from shared.agent.approvals import decide

    decide(rt.services, FailingDispatcher(), "alice", ApproveRequest(approvalId=result.approval.id,
                                                                    decision="approve"))
    assert rt.store.get(outbox_path(result.approval.id)) is not None
    assert dispatcher(rt).messages == []
    assert rt.outbox.sweep(older_than_s=0) == 1
    deliver_all(rt)
    assert ledger.calls == ["send_note:bob:hi"]
    assert rt.store.query(Query("outbox")) == []


def test_a_published_message_that_is_never_handled_is_republished_by_the_sweep(
        make_runtime: MakeRuntime) -> None:
    """Every delivery of the resume message died before claiming the run and Pub/Sub gave up on it
    (dead letter): the decided run would wait forever. The outbox entry outlives the message."""
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."), lease_ttl_s=LONG_LEASE_S)
    approve(rt, result.approval.id)
    assert len(dispatcher(rt).take()) == 1  # published, then lost
    assert rt.router.sweep()["republished"] == 0  # too young: maybe still in flight
    assert dispatcher(rt).messages == []
    overdue(rt.outbox.repo, result.approval.id, 2 * LONG_LEASE_S)  # twice the lease went by
    assert rt.router.sweep()["republished"] == 1
    deliver_all(rt)
    assert ledger.calls == ["send_note:bob:hi"]
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    assert rt.store.query(Query("outbox")) == []
    assert rt.router.sweep()["republished"] == 0  # nothing left to chase


def test_outbox_entries_of_a_turn_with_two_approvals(make_runtime: MakeRuntime) -> None:
    """The first decision's message finds the run waiting: its entry is done. The second one's
    entry stays until its own message resumed the run. A message that does not match its entry
    (other run) removes nothing."""
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Both sent."),
                              calls=[call("send_note", {"to": "bob", "body": "hi"}),
                                     call("send_note", {"to": "carol", "body": "hey"})])
    first, second = (a.id for a in result.approvals)
    approve(rt, first)
    deliver_all(rt)
    assert rt.store.get(outbox_path(first)) is None
    approve(rt, second)
    (msg,) = dispatcher(rt).take()
    rt.router.handle(msg.model_copy(update={"unitId": "run_other"}))
    assert rt.store.get(outbox_path(second)) is not None
    rt.router.handle(msg)
    assert rt.store.get(outbox_path(second)) is None
    assert sorted(ledger.calls) == ["send_note:bob:hi", "send_note:carol:hey"]


def test_replayed_approve_republishes_a_stranded_outbox_entry(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    from shared.agent.approvals import decide

    decide(rt.services, FailingDispatcher(), "alice", ApproveRequest(approvalId=result.approval.id,
                                                                    decision="approve"))
    with pytest.raises(Conflict):
        approve(rt, result.approval.id)
    assert [m.approvalId for m in dispatcher(rt).messages] == [result.approval.id]


def test_supersede_rejects_pending_approvals(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    model = ScriptedModel([calls_turn(call("send_note", {"to": "bob", "body": "hi"})), text_turn("New topic.")])
    rt = runtime(make_runtime, model, ledger)
    first, _ = start_and_drive(rt, "send", threadId="t9")
    with pytest.raises(Conflict):
        rt.agent.start("alice", RunRequest(prompt="never mind", threadId="t9"))
    second, _ = start_and_drive(rt, "never mind", threadId="t9", supersede=True)
    assert second.status == "completed"
    old = rt.runs.get_run(first.run_id)
    assert old is not None and old.run.status == "failed" and old.run.error is not None
    assert old.run.error.code == "SUPERSEDED"
    got = rt.runs.get_approval("alice", first.approval.id)
    assert got is not None and got[0].status == "rejected"
    assert any(a["kind"] == "approval_superseded" for a in audits(rt))
    with pytest.raises(Conflict):
        approve(rt, first.approval.id)
    events = rt.runs.list_events(first.run_id)
    assert events[-1]["type"] == "error" and [e["seq"] for e in events] == list(range(1, len(events) + 1))


def test_message_for_an_ended_or_unknown_run_is_a_noop(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    assert resume_run(rt.services, "run_unknown") == "not_found"
    assert resume_run(rt.services, result.run_id) == "waiting"
    approve(rt, result.approval.id)
    deliver_all(rt)
    before = rt.runs.list_events(result.run_id)
    assert resume_run(rt.services, result.run_id) == "terminal"
    assert rt.runs.list_events(result.run_id) == before
    assert resume_run(rt.services, result.run_id, expected_uid="mallory") == "not_found"


def test_tool_errors_are_told_to_the_model(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()

    def answer(request: ModelRequest) -> Turn:
        if len(request.turns) == 1:
            return calls_turn(call("send_note", {"to": "nobody", "body": "x"}))
        return text_turn("That recipient does not exist.")

    rt = runtime(make_runtime, FunctionModel(answer), ledger, trust="autonomous")
    result, live = start_and_drive(rt, "send")
    assert result.status == "completed"
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "failed" and action.error == "no such recipient"
    assert any(e["type"] == "tool_result" and e["status"] == "failed" for e in live)


def test_following_events_after_a_decision_waits_for_the_resume(make_runtime: MakeRuntime) -> None:
    from shared.agent.streaming import replay_events

    ledger = Ledger()
    rt, _, result, live = paused(make_runtime, ledger, text_turn("Sent."))
    # undecided: the follow closes at once and says why
    [closing] = replay_events(rt.runs, result.run_id, len(live), follow=True, max_wait_s=5)
    assert (closing["type"], closing["reason"], closing["seq"]) == ("stream_end", "awaiting_approval", len(live))
    approve(rt, result.approval.id)
    timer = threading.Timer(0.3, deliver_all, args=(rt,))
    timer.start()
    followed = list(replay_events(rt.runs, result.run_id, len(live), follow=True, poll_s=0.05, max_wait_s=20))
    timer.join()
    assert followed and followed[-1]["type"] == "result" and followed[-1]["result"]["status"] == "completed"
    assert followed[0]["seq"] == len(live) + 1


def test_a_resumed_invocation_gets_the_same_step_budget_as_a_fresh_run(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    first = calls_turn(call("search_memory", {"query": "a"}), call("send_note", {"to": "bob", "body": "hi"}))
    again = [calls_turn(call("search_memory", {"query": str(i)})) for i in range(2)]
    rt, model, result, _ = paused(make_runtime, ledger, *again, text_turn("Done."), calls=list(first.parts),
                                  max_loop_steps=3)
    approve(rt, result.approval.id)
    deliver_all(rt)
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed" and snap.run.steps == 4
    model.assert_complete()


def test_make_dev_runs_the_sweep_periodically(store: DocStore) -> None:
    """``make dev`` has no Cloud Scheduler: its own sweep thread picks up a decision whose resume
    message was lost, and the inline dispatcher resumes the run."""
    from devserver import start_periodic_sweep
    from shared.agent.approvals import decide
    from tests.agent.conftest import make_settings

    ledger = Ledger()
    model = ScriptedModel([calls_turn(call("send_note", {"to": "bob", "body": "hi"})), text_turn("Sent.")])
    rt = Runtime(make_settings(dispatcher="inline", lease_ttl_s=0.1), store=store, model=model,
                 registry=registry_with(ledger))
    result, _ = start_and_drive(rt, "send bob a note")
    assert result.approval is not None
    decide(rt.services, RecordingDispatcher(), "alice", ApproveRequest(approvalId=result.approval.id,
                                                                       decision="approve"))  # message lost
    stop = start_periodic_sweep(rt, interval_s=0.05)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            snap = rt.runs.get_run(result.run_id)
            if snap is not None and snap.run.terminal:
                break
            time.sleep(0.05)
    finally:
        stop.set()
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    assert ledger.calls == ["send_note:bob:hi"]


def test_a_crash_in_an_allowed_call_of_a_mixed_turn_pauses_for_the_open_approval(
        make_runtime: MakeRuntime) -> None:
    """Delegated user: mail to an allowlisted address runs at once, the other call needs approval.
    The process dies inside the allowed call, before the turn paused. Recovery must not answer the
    undecided call: it marks the cut-off call unknown and pauses for the open approval."""
    from shared.state.records import UserProfile, UserRecord

    ledger = Ledger()
    model = ScriptedModel([calls_turn(call("mail", {"to": "bob@example.com", "body": "hi"}),
                                      call("send_note", {"to": "carol", "body": "2"})),
                           text_turn("Done.")])
    rt = runtime(make_runtime, model, ledger, lease_ttl_s=LONG_LEASE_S)
    rt.users.put_user(UserRecord(uid="alice", trust_level="delegated",
                                 profile=UserProfile(email_allowlist=["bob@example.com"])))
    ledger.crash_next = True
    with pytest.raises(Crash):
        start_and_drive(rt, "mail bob, note carol")
    lapse(rt.runs, snap_id := rt.store.query(Query("runs"))[0].id)
    assert rt.router.sweep()["recovered"] == 1
    snap = rt.runs.get_run(snap_id)
    assert snap is not None and snap.run.status == "awaiting_confirmation"
    mail_action, note_action = rt.runs.list_actions(snap_id)
    assert (mail_action.status, mail_action.outcome) == ("failed", "unknown")
    assert note_action.status == "awaiting_confirmation"
    assert snap.run.pending_approval_ids == [note_action.approval_id]
    assert model.remaining == 1  # the model was not asked anything yet
    assert snap.run.result is not None and snap.run.result.approval is not None
    approve(rt, snap.run.result.approval.id)
    deliver_all(rt)
    assert ledger.calls == ["mail:bob@example.com:hi", "send_note:carol:2"]  # nothing ran twice
    responses = model.requests[1].turns[-1].parts
    assert [p.function_response.response for p in responses if p.function_response] == [
        {"error": mail_action.error, "outcome": "unknown"}, {"sent": True}]
    final = rt.runs.get_run(snap_id)
    assert final is not None and final.run.status == "completed"


def test_supersede_of_a_fully_decided_pause_interrupts_it_after_the_approved_action(
        make_runtime: MakeRuntime) -> None:
    """Every approval of the pause is decided and the resume is on its way: the run is active,
    not waiting for anyone. A new run answers 409 RUN_ACTIVE; with supersede (``rollback``) it is
    queued, the approved action still runs once, then the resumed run stops at its next step
    boundary (naming the side effect) and the new run starts."""
    ledger = Ledger()
    model = ScriptedModel([calls_turn(call("send_note", {"to": "bob", "body": "hi"})), text_turn("Next.")])
    rt = runtime(make_runtime, model, ledger)
    first, _ = start_and_drive(rt, "send", threadId="t7")
    approve(rt, first.approval.id)
    with pytest.raises(Conflict) as err:
        rt.agent.start("alice", RunRequest(prompt="next", threadId="t7"))
    assert err.value.code == "RUN_ACTIVE"
    second = rt.agent.start("alice", RunRequest(prompt="next", threadId="t7", supersede=True))
    assert second.outcome.queued
    for _ in range(3):  # the resume, the queued run's start, its continue
        deliver_all(rt)
    assert ledger.calls == ["send_note:bob:hi"]
    old = rt.runs.get_run(first.run_id)
    assert old is not None and old.run.error is not None and old.run.error.code == "SUPERSEDED"
    assert "send_note" in old.run.error.message
    new = rt.runs.get_run(second.outcome.snapshot.run.run_id)
    assert new is not None and new.run.status == "completed"


def test_supersede_rejects_approved_but_unexecuted_actions_too(make_runtime: MakeRuntime) -> None:
    """Two approvals, one approved, one pending: superseding rejects both (audited), so no action
    is left 'approved' forever, and a late resume message runs nothing."""
    ledger = Ledger()
    model = ScriptedModel([calls_turn(call("send_note", {"to": "bob", "body": "1"}),
                                      call("send_note", {"to": "carol", "body": "2"})), text_turn("New.")])
    rt = runtime(make_runtime, model, ledger)
    first, _ = start_and_drive(rt, "send both", threadId="t8")
    approve(rt, first.approvals[0].id)
    second, _ = start_and_drive(rt, "never mind", threadId="t8", supersede=True)
    assert second.status == "completed"
    assert [(a.status, a.outcome) for a in rt.runs.list_actions(first.run_id)] == [
        ("rejected", "rejected"), ("rejected", "rejected")]
    kinds = [(a["kind"], a.get("approvalId")) for a in audits(rt)]
    assert ("approval_superseded", first.approvals[0].id) in kinds
    assert ("approval_superseded", first.approvals[1].id) in kinds
    deliver_all(rt)  # the first decision's message arrives late
    assert ledger.calls == []
    old = rt.runs.get_run(first.run_id)
    assert old is not None and old.run.status == "failed" and old.run.error is not None
    assert old.run.error.code == "SUPERSEDED"


@pytest.mark.parametrize("tamper", ["args", "tool", "approval_id"])
def test_an_approval_no_longer_bound_to_its_action_is_refused(make_runtime: MakeRuntime, tamper: str) -> None:
    """Approval binding: user, run, action, tool and the hash of the arguments. If the stored
    action no longer matches what was approved, the decision is refused and nothing runs."""
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    (action,) = rt.runs.list_actions(result.run_id)
    doc = rt.store.get(paths.action(result.run_id, action.action_id))
    assert doc is not None
    changed = dict(doc.data)
    if tamper == "args":
        changed["args"] = {"to": "mallory", "body": "hi"}
    elif tamper == "tool":
        changed["tool"] = "set_status"
    else:
        changed["approvalId"] = "apr_other"
    assert changed != doc.data
    rt.store.commit([Write("set", doc.path, changed)])
    with pytest.raises(Conflict) as err:
        approve(rt, result.approval.id)
    assert err.value.code == "APPROVAL_MISMATCH"
    deliver_all(rt)
    assert ledger.calls == []


def test_arguments_changed_after_the_decision_are_not_executed(make_runtime: MakeRuntime) -> None:
    ledger = Ledger()
    rt, model, result, _ = paused(make_runtime, ledger, text_turn("Not sent."))
    approve(rt, result.approval.id)
    (action,) = rt.runs.list_actions(result.run_id)
    doc = rt.store.get(paths.action(result.run_id, action.action_id))
    assert doc is not None and doc.data["status"] == "approved"
    rt.store.commit([Write("set", doc.path, {**doc.data, "args": {"to": "mallory", "body": "hi"}})])
    deliver_all(rt)
    assert ledger.calls == []
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "failed" and "arguments changed" in (action.error or "")
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and "arguments changed" in told.response["error"]


# The approvals' TTL of these tests: no test outlives it however loaded the machine (a check that
# someone may still decide never depends on timing); they expire when a test says so (expire_pause).
LONG_TTL_S = LONG_LEASE_S


def test_a_new_run_closes_a_pause_whose_approvals_expired(make_runtime: MakeRuntime) -> None:
    """Nobody decided within APPROVAL_TTL_S: the thread is not held forever. The next run on it
    closes the paused run (approval expired, action rejected, audited) without needing supersede."""
    ledger = Ledger()
    model = ScriptedModel([calls_turn(call("send_note", {"to": "bob", "body": "hi"})), text_turn("Hello again.")])
    rt = runtime(make_runtime, model, ledger, approval_ttl_s=LONG_TTL_S)
    first, _ = start_and_drive(rt, "send", threadId="t11")
    with pytest.raises(Conflict) as err:  # still within the TTL: someone may decide
        rt.agent.start("alice", RunRequest(prompt="hello?", threadId="t11"))
    assert err.value.code == "APPROVAL_PENDING"
    expire_pause(rt.runs, "alice", first.run_id)
    second, _ = start_and_drive(rt, "hello?", threadId="t11")
    assert second.status == "completed"
    old = rt.runs.get_run(first.run_id)
    assert old is not None and old.run.status == "failed" and old.run.error is not None
    assert old.run.error.code == "APPROVAL_EXPIRED"
    (action,) = rt.runs.list_actions(first.run_id)
    assert (action.status, action.outcome) == ("rejected", "rejected")
    got = rt.runs.get_approval("alice", first.approval.id)
    assert got is not None and got[0].status == "expired"
    assert ("approval_expired", first.approval.id) in [(a["kind"], a.get("approvalId")) for a in audits(rt)]
    assert rt.runs.list_events(first.run_id)[-1]["code"] == "APPROVAL_EXPIRED"
    with pytest.raises(Gone):
        approve(rt, first.approval.id)
    assert ledger.calls == []


def test_the_sweep_closes_a_pause_whose_approvals_all_expired(make_runtime: MakeRuntime) -> None:
    """Issue 14 item 5: not only the next run or approve call: the periodic sweep closes the pause and
    releases the thread."""
    ledger = Ledger()
    rt = runtime(make_runtime, ScriptedModel([calls_turn(call("send_note", {"to": "bob", "body": "hi"}))]), ledger,
                 approval_ttl_s=LONG_TTL_S)
    first, _ = start_and_drive(rt, "send", threadId="t12")
    assert rt.router.sweep()["recovered"] == 0  # within the TTL: someone may still decide
    expire_pause(rt.runs, "alice", first.run_id)
    assert rt.router.sweep()["recovered"] == 1
    old = rt.runs.get_run(first.run_id)
    assert old is not None and old.run.status == "failed" and old.run.error is not None
    assert old.run.error.code == "APPROVAL_EXPIRED" and "sweep" in old.run.error.message
    got = rt.runs.get_approval("alice", first.approval.id)
    assert got is not None and got[0].status == "expired"
    thread = rt.runs.get_thread("alice", "t12")
    assert thread is not None and thread.active_run_id is None
    assert rt.router.sweep()["recovered"] == 0  # closed once
    assert ledger.calls == []


def test_a_pause_records_when_its_approvals_expire_and_a_resume_clears_it(make_runtime: MakeRuntime) -> None:
    """``pauseExpiresAt`` (the sweep's query key) is the pause's approval expiry, and gone once the
    run goes on: a later pause that asks nobody is not a candidate."""
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."))
    got = rt.runs.get_approval("alice", result.approval.id)
    doc = rt.store.get(paths.run(result.run_id))
    assert got is not None and doc is not None and doc.data["pauseExpiresAt"] == got[0].expires_at
    approve(rt, result.approval.id)
    deliver_all(rt)
    done = rt.store.get(paths.run(result.run_id))
    assert done is not None and done.data["status"] == "completed" and "pauseExpiresAt" not in done.data


def test_the_sweep_closes_a_pause_stored_before_pause_expires_at_existed(make_runtime: MakeRuntime) -> None:
    """A run paused by an older runtime has no ``pauseExpiresAt``: the sweep's legacy pass still
    closes it once its approvals expired."""
    ledger = Ledger()
    rt = runtime(make_runtime, ScriptedModel([calls_turn(call("send_note", {"to": "bob", "body": "hi"}))]), ledger,
                 approval_ttl_s=LONG_TTL_S)
    first, _ = start_and_drive(rt, "send", threadId="t13")
    doc = rt.store.get(paths.run(first.run_id))
    assert doc is not None and "pauseExpiresAt" in doc.data
    rt.store.commit([Write("set", doc.path, {k: v for k, v in doc.data.items() if k != "pauseExpiresAt"})])
    assert rt.router.sweep()["recovered"] == 0  # within the TTL
    expire_pause(rt.runs, "alice", first.run_id)
    assert rt.router.sweep()["recovered"] == 1
    old = rt.runs.get_run(first.run_id)
    assert old is not None and old.run.error is not None and old.run.error.code == "APPROVAL_EXPIRED"
    assert rt.router.sweep()["recovered"] == 0


def test_a_sweep_never_takes_over_a_run_that_is_just_starting(make_runtime: MakeRuntime) -> None:
    """The starting invocation holds the run's lease from its first write: a sweep during its
    first model call leaves it alone, and the model is called once per step."""
    holder: dict[str, Any] = {"calls": 0}

    def model(request: ModelRequest) -> Turn:
        holder["calls"] += 1
        if "swept" not in holder:
            holder["swept"] = holder["rt"].router.sweep()
        return text_turn("Hello.")

    rt = make_runtime(FunctionModel(model))
    holder["rt"] = rt
    started = rt.agent.start("alice", RunRequest(prompt="hi"))
    snap = rt.runs.get_run(started.outcome.snapshot.run.run_id)
    assert snap is not None and snap.run.lease is not None and snap.run.lease.owner == started.owner
    result = rt.agent.run(rt.agent.context(started))
    assert holder["swept"]["recovered"] == 0
    assert result.status == "completed" and holder["calls"] == 1


def test_an_invocation_that_loses_its_run_stops_quietly(make_runtime: MakeRuntime,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """Another invocation moves the run while this one waits for the model: this one's commit
    loses, it writes nothing more, does not call the run failed, and reports the stored state."""
    holder: dict[str, Any] = {}

    def model(request: ModelRequest) -> Turn:
        rt, run_id = holder["rt"], holder["run_id"]
        rt.store.commit([Write("update", paths.run(run_id), {"updatedAt": time.time()})])  # the other one
        return text_turn("Hello.")

    rt = make_runtime(FunctionModel(model))
    holder["rt"] = rt
    started = rt.agent.start("alice", RunRequest(prompt="hi"))
    holder["run_id"] = run_id = started.outcome.snapshot.run.run_id
    result = rt.agent.run(rt.agent.context(started))
    assert result.run_id == run_id and result.status == "planning" and result.summary == "the run is in progress"
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.status == "planning" and snap.run.error is None
    assert [e["type"] for e in rt.runs.list_events(run_id)] == ["status"]  # nothing of the lost step
    assert any("took the run over" in r.getMessage() for r in caplog.records)
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)


def test_a_message_that_is_never_handled_is_republished_less_and_less_often(
        make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture) -> None:
    """A decision whose resume keeps failing (every message lost) is not re-sent at a steady beat
    forever: the wait doubles with each publication (2, 4, 8 … leases, at most 6 h), and from the
    fifth publication on each re-send is reported as an error."""

    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Sent."), lease_ttl_s=10.0)
    approve(rt, result.approval.id)
    dispatcher(rt).take()  # lost
    path = outbox_path(result.approval.id)

    def republished(count: int, age_s: float) -> bool:
        doc = rt.store.get(path)
        assert doc is not None and doc.data["status"] == "published"
        rt.store.commit([Write("update", path, {"publishCount": count, "publishedAt": time.time() - age_s})])
        sent = rt.router.sweep()["republished"]
        assert len(dispatcher(rt).take()) == sent  # lost again
        return sent == 1

    assert not republished(1, 15) and republished(1, 25)     # 2 leases after the first publication
    assert rt.store.get(path).data["publishCount"] == 2       # type: ignore[union-attr]
    assert not republished(3, 70) and republished(3, 85)     # 8 leases after the third
    assert not errors(caplog)
    assert not republished(20, 5 * 3600) and republished(20, 6.1 * 3600)  # capped at 6 h
    assert errors(caplog) == ["resume message published 20 times and never handled"]
    rt.router.handle(WorkMessage(unitId=result.run_id, uid="alice",
                                                            approvalId=result.approval.id))  # finally handled
    assert ledger.calls == ["send_note:bob:hi"]
    assert rt.store.get(path) is None


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_the_claim_that_resumes_a_paused_run_removes_its_outbox_entries(make_runtime: MakeRuntime) -> None:
    """Whatever resumes the run first (one message, another, the sweep), its claim consumes the
    pause's decisions: no outbox entry outlives the run to be re-published for nothing."""
    ledger = Ledger()
    rt, _, result, _ = paused(make_runtime, ledger, text_turn("Both sent."),
                              calls=[call("send_note", {"to": "bob", "body": "1"}),
                                     call("send_note", {"to": "carol", "body": "2"})])
    for approval in result.approvals:
        approve(rt, approval.id)
    assert len(dispatcher(rt).take()) == 2  # both messages lost
    assert len(rt.store.query(Query("outbox"))) == 2
    assert resume_run(rt.services, result.run_id) == "resumed"  # e.g. the sweep's own pass
    assert rt.store.query(Query("outbox")) == []
    assert sorted(ledger.calls) == ["send_note:bob:1", "send_note:carol:2"]
