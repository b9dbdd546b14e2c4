"""The plan host's parts, each alone: plan edits and act records are plain functions of their
inputs; the reflection and the parent wake-up work on one invocation's context over a real store."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import ModelError
from shared.ids import new_id
from shared.loop.context import RunContext
from shared.models.base import ModelRequest, Part, Turn
from shared.models.scripted import FunctionModel, text_turn
from shared.plans import plan_edits, react
from shared.plans.parent import wake_parent
from shared.plans.plan_state import plan_state
from shared.plans.planner import Modification
from shared.plans.reflect import reflect
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from shared.state.host_states import PlanRunState
from shared.state.plan_records import PlanTask
from shared.state.records import RunRecord, UserRecord
from tests.agent.conftest import make_settings


def _tasks() -> list[PlanTask]:
    return [PlanTask(id="t1", title="one", status="completed", order=0),
            PlanTask(id="t2", title="two", status="in_progress", order=1),
            PlanTask(id="t3", title="three", order=2)]


def test_modify_adds_after_a_task_and_renumbers_orders() -> None:
    tasks, changes = plan_edits.modify(_tasks(), [Modification(op="add", after="t1", title="new", reason="r")], 2)
    assert [t.id for t in tasks] == ["t1", "t4", "t2", "t3"]
    assert [t.order for t in tasks] == [0, 1, 2, 3]
    assert tasks[1].created_in_version == 2
    assert [(c.op, c.task_id) for c in changes] == [("add", "t4")]


def test_modify_refuses_to_touch_a_completed_or_unknown_task() -> None:
    before = _tasks()
    tasks, changes = plan_edits.modify(before, [Modification(op="modify", taskId="t1", title="x", reason="r"),
                                                Modification(op="obsolete", taskId="t9", reason="r")], 2)
    assert [(t.id, t.title, t.status) for t in tasks] == [(t.id, t.title, t.status) for t in before]
    assert [c.op for c in changes] == ["refine", "refine"]
    assert "refused to modify completed task t1" in changes[0].what
    assert "unknown task t9" in changes[1].what


def test_modify_obsoletes_a_pending_task_without_touching_the_input() -> None:
    before = _tasks()
    tasks, changes = plan_edits.modify(before, [Modification(op="obsolete", taskId="t3", reason="r")], 2)
    assert tasks[2].status == "obsolete" and before[2].status == "pending"
    assert plan_edits.live_count(tasks) == 2 and plan_edits.live_count(before) == 3
    assert changes[0].op == "obsolete"


def test_an_act_is_shown_to_the_reflection_as_recorded() -> None:
    act = react.Act(tool="read_file", outcome="ok", args={"path": "a"}, preview="read a", observation={"text": "x"})
    assert act.to_reflect() == {"action": {"tool": "read_file", "args": {"path": "a"}, "preview": "read a"},
                                "outcome": "ok", "observation": {"text": "x"}}
    done = react.task_done("all good")
    assert done.to_reflect() == {"action": {"tool": react.TASK_DONE}, "outcome": "done",
                                 "observation": {"text": "all good"}}


def test_observations_are_bounded() -> None:
    small = {"text": "x" * 10}
    assert react.bounded(small) is small
    big = react.bounded({"text": "x" * 10_000}, limit=100)
    assert big["truncated"] is True and len(big["partial"]) == 100


def _ctx(store: DocStore, answer: Callable[[ModelRequest], Turn], **state: Any) -> RunContext:
    """A plan unit's invocation context over a real store (no session needed by these parts)."""
    rt = Runtime(make_settings(), store=store, model=FunctionModel(answer, name="gemini-3-flash-preview"),
                 authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    run = RunRecord(run_id=new_id("run"), uid="alice", thread_id="", status="planning", host="plan",
                    host_state=PlanRunState(session_id="ses_p", objective="do it", deadline=time.time() + 60,
                                            tasks=_tasks(), task_id="t2", **state))
    snap = rt.runs.create_unit(run, turns=[Turn(role="user", parts=[Part(text="do it")])], events=[])
    return RunContext(services=rt.services, snapshot=snap, turns=[], user=UserRecord(uid="alice"),
                      deadline=time.monotonic() + 30, owner="test", host=rt.services.hosts.fallback)


def test_the_reflection_is_charged_to_the_run_like_the_loops_calls(sqlite_docstore: DocStore) -> None:
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> Turn:
        seen.append(request)
        return text_turn(json.dumps({"taskComplete": True, "summary": "done"}))

    ctx = _ctx(sqlite_docstore, answer)
    state = plan_state(ctx)
    assert state.current is not None
    got = reflect(ctx, state, state.current, react.task_done("all good"))
    assert got is not None and got.taskComplete and got.summary == "done"
    assert len(seen) == 1 and "all good" in seen[0].turns[-1].text
    assert ctx.run.usage.requests == 1 and ctx.run.cost_usd > 0
    ledger = [w for w in ctx.pending if "/usage/" in w.path or w.path.startswith("usage")]
    assert len(ledger) == 1 and ledger[0].data["component"] == "reflector"


def test_a_failed_reflection_loses_nothing(sqlite_docstore: DocStore) -> None:
    def answer(request: ModelRequest) -> Turn:
        raise ModelError("unavailable")

    ctx = _ctx(sqlite_docstore, answer)
    state = plan_state(ctx)
    assert state.current is not None
    assert reflect(ctx, state, state.current, react.task_done("x")) is None
    # The act goes on; the failed call is in the ledger and counted as a request, without tokens.
    assert ctx.run.usage.requests == 1 and ctx.run.usage.total_tokens == 0
    ledger = [w for w in ctx.pending if "/usage/" in w.path]
    assert len(ledger) == 1 and ledger[0].data["outcome"] == "error"


def test_only_a_plan_with_a_waiting_parent_wakes_it(sqlite_docstore: DocStore) -> None:
    assert wake_parent(_ctx(sqlite_docstore, lambda r: text_turn(""))) is None
    orphan = _ctx(sqlite_docstore, lambda r: text_turn(""), parent_run_id="run_gone", parent_action_id="act_gone")
    assert wake_parent(orphan) is None and orphan.pending == []
