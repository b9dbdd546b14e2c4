"""multitaskStrategy on a busy thread (docs/run-control.md): enqueue, interrupt, rollback, the
``supersede`` alias and cancelling, on both real stores, messages delivered by hand through the
router (the same handlers Pub/Sub reaches in production)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.agent.run_queue import _launch, thread_queue
from shared.api import RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import Conflict
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.records import RunRecord, RunResult
from tests.agent.conftest import MakeRuntime
from tests.agent.test_approvals import Ledger, runtime
from tests.agent.test_loop import start_and_drive
from tests.messages import deliver


def texts(request: ModelRequest) -> list[str]:
    return [p.text for t in request.turns for p in t.parts if p.text]


class Echo:
    """Answers ``re: <the prompts of the last user turn>``; records what each request held."""

    def __init__(self, act: dict[str, Turn] | None = None) -> None:
        self.requests: list[ModelRequest] = []
        self.act = act or {}

    def __call__(self, request: ModelRequest) -> Turn:
        self.requests.append(request)
        last = request.turns[-1]
        if last.role == "user":
            prompt = "".join(p.text or "" for p in last.parts)
            if prompt in self.act:
                return self.act[prompt]
        return text_turn("re: " + (texts(request)[-1] if texts(request) else ""))


def run_of(rt: Runtime, run_id: str) -> RunRecord:
    snap = rt.runs.get_run(run_id)
    assert snap is not None
    return snap.run


def thread_texts(rt: Runtime, thread_id: str) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in rt.runs.list_messages("alice", thread_id, 100)]


def test_enqueue_runs_one_at_a_time_in_arrival_order(make_runtime: MakeRuntime) -> None:
    echo = Echo()
    rt = make_runtime(FunctionModel(echo))
    first = rt.agent.start("alice", RunRequest(prompt="one", threadId="q1", multitaskStrategy="enqueue"))
    assert not first.outcome.queued
    queued = [rt.agent.start("alice", RunRequest(prompt=p, threadId="q1", multitaskStrategy="enqueue"))
              for p in ("two", "three", "four")]
    assert all(s.outcome.queued for s in queued)
    ids = [s.outcome.snapshot.run.run_id for s in queued]
    assert [run_of(rt, i).status for i in ids] == ["queued"] * 3
    assert [run_of(rt, i).queued.position for i in ids] == [0, 1, 2]  # type: ignore[union-attr]
    assert rt.runs.list_events(ids[0])[0]["status"] == "queued"
    deliver(rt)  # every queued run's message: none may start while "one" works
    assert [run_of(rt, i).status for i in ids] == ["queued"] * 3
    assert rt.agent.run(rt.agent.context(first)).status == "completed"
    deliver(rt)
    runs = [run_of(rt, i) for i in ids]
    assert [r.status for r in runs] == ["completed"] * 3
    assert [r.started_at for r in runs] == sorted(r.started_at or 0 for r in runs)
    assert thread_texts(rt, "q1") == [("user", "one"), ("assistant", "re: one"), ("user", "two"),
                                      ("assistant", "re: two"), ("user", "three"), ("assistant", "re: three"),
                                      ("user", "four"), ("assistant", "re: four")]
    # each queued run saw the earlier runs' answers: its history was read when it started
    assert texts(echo.requests[-1])[-2:] == ["re: three", "four"]
    assert rt.runs.get_thread("alice", "q1").queue == []  # type: ignore[union-attr]
    assert rt.services.outbox.repo.all() == []


def test_a_queued_run_starts_with_its_turn_count_so_its_first_invocation_reads_by_name(
        make_runtime: MakeRuntime) -> None:
    """Issue 33: the invocation that continues a run just taken off its queue reads the turns the
    start wrote by name, as the run's turn count says (before, the count stayed 0 and every such
    invocation fell back to querying them)."""
    rt = make_runtime(FunctionModel(Echo()))
    first = rt.agent.start("alice", RunRequest(prompt="one", threadId="q2", multitaskStrategy="enqueue"))
    second = rt.agent.start("alice", RunRequest(prompt="two", threadId="q2", multitaskStrategy="enqueue"))
    assert rt.agent.run(rt.agent.context(first)).status == "completed"
    run_id = second.outcome.snapshot.run.run_id
    outcome, started = thread_queue(rt.services).start_queued(run_id, lambda r, h: _launch(rt.services, r, h))
    assert outcome == "started" and started is not None
    stored = run_of(rt, run_id)
    _, turns = rt.runs.resume_reads(stored)
    assert turns is not None and len(turns) == stored.turn_count > 0, (stored.turn_count, turns)


def test_reject_is_the_default_and_a_queue_holds_the_thread(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(FunctionModel(Echo()))
    first = rt.agent.start("alice", RunRequest(prompt="one", threadId="q2"))
    with pytest.raises(Conflict) as err:
        rt.agent.start("alice", RunRequest(prompt="two", threadId="q2"))
    assert err.value.code == "RUN_ACTIVE"
    rt.agent.start("alice", RunRequest(prompt="two", threadId="q2", multitaskStrategy="enqueue"))
    assert rt.agent.run(rt.agent.context(first)).status == "completed"
    # the thread is free but "two" has not started yet: a rejecting run does not jump the queue
    with pytest.raises(Conflict):
        rt.agent.start("alice", RunRequest(prompt="three", threadId="q2"))


def paused_on_a_note(make_runtime: MakeRuntime, prompt: str, body: str, thread: str
                     ) -> tuple[Runtime, Echo, Ledger, RunResult]:
    """A run on ``thread`` whose ``prompt`` sends Bob a note (``body``): paused for approval."""
    ledger = Ledger()
    echo = Echo({prompt: calls_turn(call("send_note", {"to": "bob", "body": body}))})
    rt = runtime(make_runtime, FunctionModel(echo), ledger)
    first, _ = start_and_drive(rt, prompt, threadId=thread)
    assert first.status == "awaiting_confirmation"
    return rt, echo, ledger, first


def test_approval_wait_holds_the_queue(make_runtime: MakeRuntime) -> None:
    from tests.agent.test_approvals import approve

    rt, _, ledger, first = paused_on_a_note(make_runtime, "send", "hi", "q3")
    second = rt.agent.start("alice", RunRequest(prompt="next", threadId="q3", multitaskStrategy="enqueue"))
    deliver(rt)
    assert run_of(rt, second.outcome.snapshot.run.run_id).status == "queued"
    approve(rt, first.approval.id)  # type: ignore[union-attr]
    deliver(rt)
    assert run_of(rt, first.run_id).status == "completed"
    assert run_of(rt, second.outcome.snapshot.run.run_id).status == "completed"
    assert ledger.calls == ["send_note:bob:hi"]


def test_a_run_paused_by_earlier_code_starts_the_queue_behind_it_when_it_ends(make_runtime: MakeRuntime) -> None:
    """A rolling deploy: a run paused by the code before issue 33's third session, with a run queued
    behind it by that code, stores neither ``pausedActionIds`` nor ``queuedBehind``. Approved and
    resumed by this code, its end still starts the queue (before: nothing was published, the queued
    run waited for the sweep, up to a minute in production)."""
    from shared.state import paths
    from shared.state.docstore import Write
    from tests.agent.test_approvals import approve

    rt, _, ledger, first = paused_on_a_note(make_runtime, "send", "hi", "q-old")
    second = rt.agent.start("alice", RunRequest(prompt="next", threadId="q-old", multitaskStrategy="enqueue"))
    deliver(rt)
    doc = rt.store.get(paths.run(first.run_id))
    assert doc is not None and doc.data.get("queuedBehind") is True and doc.data.get("pausedActionIds")
    old = {k: v for k, v in doc.data.items() if k not in ("queuedBehind", "pausedActionIds")}
    rt.store.commit([Write("set", doc.path, old)])  # as 732e4d2 wrote it
    approve(rt, first.approval.id)  # type: ignore[union-attr]
    deliver(rt)  # no sweep
    assert run_of(rt, first.run_id).status == "completed"
    assert run_of(rt, second.outcome.snapshot.run.run_id).status == "completed"
    assert ledger.calls == ["send_note:bob:hi"]


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_a_run_that_interrupts_a_pause_ahead_of_a_queue_starts_that_queue_when_it_ends(
        make_runtime: MakeRuntime, strategy: str) -> None:
    """A paused run with a run queued behind it; an ``interrupt``/``rollback`` closes the pause and
    starts at once, ahead of the queue. Its end starts the queue (issue 33's ``queuedBehind``: the
    run that goes ahead of a queue knows it; before, nothing was published and the queued run
    waited for the sweep)."""
    rt, _, ledger, first = paused_on_a_note(make_runtime, "send", "hi", "q-ahead")
    queued = rt.agent.start("alice", RunRequest(prompt="later", threadId="q-ahead", multitaskStrategy="enqueue"))
    assert queued.outcome.queued
    deliver(rt)  # its dequeue message, at once: not its turn (the entry goes)
    assert run_of(rt, queued.outcome.snapshot.run.run_id).status == "queued"
    ahead, _ = start_and_drive(rt, "now", threadId="q-ahead", multitaskStrategy=strategy)
    assert ahead.status == "completed"
    assert run_of(rt, first.run_id).status == "failed"
    deliver(rt)  # no sweep
    assert run_of(rt, queued.outcome.snapshot.run.run_id).status == "completed"
    assert ledger.calls == []


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_interrupt_stops_the_active_run_at_its_next_step_keeping_its_side_effect(
        make_runtime: MakeRuntime, strategy: str) -> None:
    ledger = Ledger()
    holder: dict[str, Any] = {}

    echo = Echo()

    def model(request: ModelRequest) -> Turn:
        echo.requests.append(request)
        if texts(request)[-1] == "note it" and "interrupter" not in holder:
            # while the run works on its first step (its tool runs next), a new run arrives
            holder["interrupter"] = rt.agent.start(
                "alice", RunRequest(prompt="what do you remember?", threadId="q4",
                                    multitaskStrategy=strategy))  # type: ignore[arg-type]
            return calls_turn(call("send_note", {"to": "bob", "body": "jazz"}))
        return text_turn("re: " + texts(request)[-1])

    rt = runtime(make_runtime, FunctionModel(model), ledger, trust="autonomous")
    first, _ = start_and_drive(rt, "note it", threadId="q4")
    second = holder["interrupter"]
    assert second.outcome.queued
    assert first.status == "failed" and first.error is not None and first.error.code == "SUPERSEDED"
    assert "send_note" in first.error.message and second.outcome.snapshot.run.run_id in first.error.message
    deliver(rt)
    done = run_of(rt, second.outcome.snapshot.run.run_id)
    assert done.status == "completed"
    assert ledger.calls == ["send_note:bob:jazz"]  # ran once, kept, reported
    last = texts(echo.requests[-1])
    assert last[-1] == "what do you remember?"
    if strategy == "rollback":
        assert "note it" not in last
        assert thread_texts(rt, "q4") == [("user", "what do you remember?"),
                                          ("assistant", "re: what do you remember?")]
    else:
        assert "note it" in last
        assert ("user", "note it") in thread_texts(rt, "q4")


def test_supersede_is_rollback_and_the_abandoned_prompt_never_leaks(make_runtime: MakeRuntime) -> None:
    rt, echo, ledger, first = paused_on_a_note(make_runtime, "I like jazz", "jazz", "q5")
    second, _ = start_and_drive(rt, "what do you remember?", threadId="q5", supersede=True)
    assert second.status == "completed"
    assert all("jazz" not in t for t in texts(echo.requests[-1]))
    assert thread_texts(rt, "q5") == [("user", "what do you remember?"), ("assistant", "re: what do you remember?")]
    assert run_of(rt, first.run_id).error.code == "SUPERSEDED"  # type: ignore[union-attr]
    assert ledger.calls == []
    with pytest.raises(ValueError, match="alias"):
        RunRequest(prompt="x", supersede=True, multitaskStrategy="enqueue")


def test_cancel_a_queued_run_and_an_active_one(make_runtime: MakeRuntime) -> None:
    from shared.agent.run_queue import cancel_run

    # "one" looks something up first: the cancel made while it is held in memory is learned from its
    # first commit (the stop request changed the run's token, issue 33) and stops it at the step
    # boundary after it, before its second model call.
    echo = Echo({"one": calls_turn(call("search_memory", {"query": "tea"}))})
    rt = make_runtime(FunctionModel(echo))
    first = rt.agent.start("alice", RunRequest(prompt="one", threadId="q6"))
    second = rt.agent.start("alice", RunRequest(prompt="two", threadId="q6", multitaskStrategy="enqueue"))
    third = rt.agent.start("alice", RunRequest(prompt="three", threadId="q6", multitaskStrategy="enqueue"))
    run, cancelling = cancel_run(rt.services, "alice", second.outcome.snapshot.run.run_id)
    assert run.status == "failed" and not cancelling and run.error is not None and run.error.code == "CANCELLED"
    assert cancel_run(rt.services, "alice", second.outcome.snapshot.run.run_id)[0].status == "failed"  # repeat
    with pytest.raises(Exception, match="not found"):
        cancel_run(rt.services, "bob", third.outcome.snapshot.run.run_id)
    run, cancelling = cancel_run(rt.services, "alice", first.outcome.snapshot.run.run_id)
    assert cancelling
    result = rt.agent.run(rt.agent.context(first))
    assert result.status == "failed" and result.error is not None and result.error.code == "CANCELLED"
    assert len(echo.requests) == 1  # one model call, then the stop
    deliver(rt)
    assert run_of(rt, third.outcome.snapshot.run.run_id).status == "completed"
    assert [t for _, t in thread_texts(rt, "q6")] == ["one", "three", "re: three"]
    with pytest.raises(Conflict):
        cancel_run(rt.services, "alice", third.outcome.snapshot.run.run_id)


def test_a_lost_dequeue_message_is_published_again_by_the_sweep(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(FunctionModel(Echo()))
    first = rt.agent.start("alice", RunRequest(prompt="one", threadId="q7"))
    second = rt.agent.start("alice", RunRequest(prompt="two", threadId="q7", multitaskStrategy="enqueue"))
    assert rt.agent.run(rt.agent.context(first)).status == "completed"
    d = rt.dispatcher
    assert isinstance(d, RecordingDispatcher)
    d.take()  # every message lost (the instance died after its commit)
    assert run_of(rt, second.outcome.snapshot.run.run_id).status == "queued"
    rt.router.sweep()
    deliver(rt)
    assert run_of(rt, second.outcome.snapshot.run.run_id).status == "completed"


def test_a_queued_runs_stream_starts_with_queued_and_ends_with_a_follow_link(make_runtime: MakeRuntime) -> None:
    from shared.agent.run_handlers import stream_run

    rt = make_runtime(FunctionModel(Echo()), follow_max_wait_s=0.3)
    rt.agent.start("alice", RunRequest(prompt="one", threadId="q8"))
    events = list(stream_run(rt.agent, "alice", RunRequest(prompt="two", threadId="q8", multitaskStrategy="enqueue")))
    assert [(e["type"], e.get("status")) for e in events] == [("status", "queued"), ("stream_end", "queued")]
    assert events[-1]["follow"].startswith(f"/api/agent/runs/{events[0]['runId']}/events?after=1&follow=1")


def test_a_queued_run_keeps_the_files_sent_with_its_prompt(make_runtime: MakeRuntime) -> None:
    """Files sent with a prompt (``start(attachments=...)``, e.g. an A2A message's file parts) close
    the prompt's turn, also when the run waits in its thread's queue and starts later."""
    from shared.models.base import Blob, Part

    echo = Echo()
    rt = make_runtime(FunctionModel(echo))
    png = Part(inline_data=Blob(mime_type="image/png", data="iVBORw0KGgo=", display_name="a.png"))
    first = rt.agent.start("alice", RunRequest(prompt="one", threadId="qf"), attachments=[png])
    later = rt.agent.start("alice", RunRequest(prompt="two", threadId="qf", multitaskStrategy="enqueue"),
                           attachments=[Part(text="[file b.txt (text/plain)]\nbee")])
    assert later.outcome.queued
    rt.agent.run(rt.agent.context(first))
    deliver(rt)
    assert run_of(rt, later.outcome.snapshot.run.run_id).status == "completed"
    assert echo.requests[0].turns[-1].parts == [Part(text="one"), png]
    assert echo.requests[1].turns[-1].parts == [Part(text="two"), Part(text="[file b.txt (text/plain)]\nbee")]
