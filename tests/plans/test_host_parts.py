"""The plan host's parts, each alone: plan edits and act records are plain functions of their inputs."""

from __future__ import annotations

from shared.plans import plan_edits, react
from shared.plans.planner import Modification
from shared.state.plan_records import PlanTask


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
    act = react.Act(tool="read_file", args={"path": "a"}, preview="read a", observation={"text": "x"})
    assert act.to_reflect() == {"action": {"tool": "read_file", "args": {"path": "a"}, "preview": "read a"},
                                "observation": {"text": "x"}}
    done = react.task_done("all good")
    assert done.to_reflect() == {"action": {"tool": react.TASK_DONE}, "observation": {"text": "all good"}}


def test_observations_are_bounded() -> None:
    small = {"text": "x" * 10}
    assert react.bounded(small) is small
    big = react.bounded({"text": "x" * 10_000}, limit=100)
    assert big["truncated"] is True and len(big["partial"]) == 100
