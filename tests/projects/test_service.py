"""The workspace rules (shared/projects/service.py) with a fixed clock: the audit's overdue /
blocked / stale lists on fixed dates, template search, creation from a template, retried
creations, and the task update rules."""

from __future__ import annotations

from datetime import date

import pytest

from shared.errors import ToolError
from shared.projects.service import (
    STALE_AFTER_DAYS,
    ProjectNotFound,
    ProjectsService,
    TaskNotFound,
    TemplateNotFound,
    derived_id,
)
from shared.state.project_records import TemplateTask
from tests.projects.conftest import Clock


def launch_template(service: ProjectsService, uid: str = "alice", key: str = "k1") -> str:
    tpl = service.create_template(uid, key=key, name="Product launch", description="Ship a product to market",
                                  tasks=[TemplateTask(title="Write the brief", due_in_days=2),
                                         TemplateTask(title="Book the venue", description="100 people"),
                                         TemplateTask(title="Send invitations", due_in_days=10)])
    return tpl.template_id


def new_project(service: ProjectsService, uid: str = "alice", key: str = "p1") -> str:
    template_id = launch_template(service, uid, key=f"tpl-{key}")
    project, _, _ = service.create_project_from_template(uid, key=key, template_id=template_id, name="Spring launch",
                                                         description=None)
    return project.project_id


def test_creating_from_a_template_copies_its_tasks_with_due_dates(service: ProjectsService) -> None:
    template_id = launch_template(service)
    project, tasks, created = service.create_project_from_template(
        "alice", key="act_1", template_id=template_id, name="Spring launch", description=None)
    assert created and project.project_id == derived_id("prj", "act_1") and project.template_id == template_id
    assert project.description == "Ship a product to market"  # the template's, when none is given
    assert [(t.title, t.status, t.due_date) for t in tasks] == [
        ("Write the brief", "todo", date(2026, 3, 17)), ("Book the venue", "todo", None),
        ("Send invitations", "todo", date(2026, 3, 25))]
    assert [t.task_id for t in service.list_tasks("alice", project.project_id)] == [t.task_id for t in tasks]
    # The same call again (a retry with the same action id) finds the project: nothing doubles.
    again, again_tasks, created_again = service.create_project_from_template(
        "alice", key="act_1", template_id=template_id, name="Spring launch", description=None)
    assert not created_again and again.project_id == project.project_id
    assert [t.task_id for t in again_tasks] == [t.task_id for t in tasks]
    assert len(service.list_projects("alice")) == 1


def test_due_dates_of_a_template_follow_the_users_day(service: ProjectsService, clock: Clock) -> None:
    clock.at -= 11 * 3600  # 01:00 UTC on 15 March is still 14 March in Los Angeles
    template_id = launch_template(service)
    _, tasks, _ = service.create_project_from_template("alice", key="a", template_id=template_id, name="x",
                                                       description="", timezone="America/Los_Angeles")
    assert tasks[0].due_date == date(2026, 3, 16)


def test_unknown_template_and_project_are_named(service: ProjectsService) -> None:
    with pytest.raises(TemplateNotFound, match="tpl_nope"):
        service.create_project_from_template("alice", key="a", template_id="tpl_nope", name="x", description=None)
    with pytest.raises(ProjectNotFound, match="prj_nope"):
        service.list_tasks("alice", "prj_nope")
    with pytest.raises(ProjectNotFound):
        service.audit("alice", "../alice")
    pid = new_project(service)
    with pytest.raises(TaskNotFound, match="tsk_nope"):
        service.update_task("alice", pid, "tsk_nope", status="done")
    assert service.list_projects("alice") and not service.repo.list_projects("bob")
    with pytest.raises(ProjectNotFound):  # another user's project
        service.get_project("bob", pid)


def test_template_search_ranks_by_shared_words(service: ProjectsService, clock: Clock) -> None:
    service.create_template("alice", key="a", name="Product launch", description="Go to market",
                            tasks=[TemplateTask(title="Press release")])
    clock.at += 1
    service.create_template("alice", key="b", name="Hiring", description="Open a role and hire",
                            tasks=[TemplateTask(title="Plan the product interview")])
    clock.at += 1
    service.create_template("alice", key="c", name="Wedding", description="", tasks=[TemplateTask(title="Venue")])
    assert [t.name for t in service.search_templates("alice", "product launch")] == ["Product launch", "Hiring"]
    assert [t.name for t in service.search_templates("alice", "hire")] == ["Hiring"]
    assert service.search_templates("alice", "spaceship") == []
    assert [t.name for t in service.search_templates("alice", "")] == ["Wedding", "Hiring", "Product launch"]
    assert service.search_templates("bob", "") == []
    with pytest.raises(ToolError, match="at least one default task"):
        service.create_template("alice", key="d", name="Empty", description="", tasks=[])


def test_task_creation_appends_and_a_retry_returns_the_same_task(service: ProjectsService) -> None:
    pid = new_project(service)
    task, created = service.create_task("alice", pid, key="act_9", title="Order badges", description="",
                                        due_date=date(2026, 3, 20))
    assert created and task.order == 4 and task.status == "todo"
    same, created_again = service.create_task("alice", pid, key="act_9", title="Order badges", description="",
                                              due_date=date(2026, 3, 20))
    assert not created_again and same.task_id == task.task_id
    assert [t.title for t in service.list_tasks("alice", pid)][-1] == "Order badges"
    assert len(service.list_tasks("alice", pid)) == 4


def test_task_update_rules(service: ProjectsService, clock: Clock) -> None:
    pid = new_project(service)
    tid = service.list_tasks("alice", pid)[0].task_id
    with pytest.raises(ToolError, match="nothing to change"):
        service.update_task("alice", pid, tid)
    with pytest.raises(ToolError, match="needs blockedReason"):
        service.update_task("alice", pid, tid, status="blocked")
    with pytest.raises(ToolError, match="only for blocked tasks"):
        service.update_task("alice", pid, tid, blocked_reason="waiting")
    assert service.repo.get_task("alice", pid, tid).status == "todo"  # type: ignore[union-attr]
    clock.at += 60
    task, changed = service.update_task("alice", pid, tid, status="blocked", blocked_reason="Waiting for the budget")
    assert (task.status, task.blocked_reason, changed) == ("blocked", "Waiting for the budget",
                                                           ["status", "blocked_reason"])
    assert task.updated_at == clock.at
    # Still blocked: the reason may change alone; other fields keep theirs.
    task, changed = service.update_task("alice", pid, tid, blocked_reason="Waiting for legal")
    assert task.blocked_reason == "Waiting for legal" and changed == ["blocked_reason"]
    task, changed = service.update_task("alice", pid, tid, status="in_progress", due_date=date(2026, 4, 1))
    assert task.blocked_reason is None and task.due_date == date(2026, 4, 1)
    assert changed == ["status", "due_date", "blocked_reason"]
    task, changed = service.update_task("alice", pid, tid, clear_due_date=True, title="Write the short brief")
    assert task.due_date is None and task.title == "Write the short brief" and changed == ["title", "due_date"]
    stored = service.repo.get_task("alice", pid, tid)
    assert stored is not None and stored.model_dump() == task.model_dump()


def test_audit_lists_overdue_blocked_and_stale_tasks_on_fixed_dates(service: ProjectsService, clock: Clock) -> None:
    # "Now" is 15 March 2026 12:00 UTC; each task is created (and last updated) at a chosen time.
    clock.days_ago(30)
    pid = service.create_project_from_template(
        "alice", key="p", name="Audit me", description="",
        template_id=service.create_template("alice", key="t", name="T", description="",
                                            tasks=[TemplateTask(title="x")]).template_id)[0].project_id

    def add(title: str, *, days_ago: float, due: date | None = None, status: str | None = None,
            reason: str | None = None) -> str:
        clock.days_ago(days_ago)
        task, _ = service.create_task("alice", pid, key=title, title=title, description="", due_date=due)
        if status is not None:
            service.update_task("alice", pid, task.task_id, status=status, blocked_reason=reason)  # type: ignore[arg-type]
        return task.task_id

    overdue_5 = add("overdue by 5", days_ago=1, due=date(2026, 3, 10))
    overdue_1 = add("overdue by 1", days_ago=1, due=date(2026, 3, 14), status="in_progress")
    add("due today", days_ago=1, due=date(2026, 3, 15))
    add("done late", days_ago=20, due=date(2026, 3, 1), status="done")
    blocked = add("blocked", days_ago=2, status="blocked", reason="Waiting for the venue")
    stale_edge = add("updated exactly 14 days ago", days_ago=STALE_AFTER_DAYS)
    add("updated 13.9 days ago", days_ago=13.9)
    old_blocked = add("blocked long ago", days_ago=40, status="blocked", reason="Legal")
    clock.days_ago(0)

    audit = service.audit("alice", pid)
    assert audit.today == date(2026, 3, 15)
    assert [r.task_id for r in audit.overdue] == [overdue_5, overdue_1]  # most overdue first
    assert [r.days_overdue for r in audit.overdue] == [5, 1]
    assert {r.task_id for r in audit.blocked} == {blocked, old_blocked}
    assert next(r for r in audit.blocked if r.task_id == blocked).blocked_reason == "Waiting for the venue"
    # The template task "x" was made 30 days ago and never touched: stale too.
    stale = {r.task_id: r.days_since_update for r in audit.stale}
    assert stale_edge in stale and old_blocked in stale and len(stale) == 3
    assert stale[old_blocked] == 40 and stale[stale_edge] == 14
    assert (audit.overdue_count, audit.blocked_count, audit.stale_count) == (2, 2, 3)
    assert audit.total_tasks == 9 and audit.by_status == {"todo": 5, "in_progress": 1, "blocked": 2, "done": 1}
    assert not audit.healthy and audit.summary == "9 tasks, 1 done; 2 overdue, 2 blocked, 3 stale"
    out = audit.out()
    assert out["overdueCount"] == 2 and out["overdue"][0]["dueDate"] == "2026-03-10"
    assert out["staleAfterDays"] == STALE_AFTER_DAYS

    # At 01:00 UTC it is still 14 March in Los Angeles: a task due on the 14th is not overdue there.
    clock.at -= 11 * 3600
    la = service.audit("alice", pid, timezone="America/Los_Angeles")
    assert la.today == date(2026, 3, 14) and [r.task_id for r in la.overdue] == [overdue_5]
    assert service.audit("alice", pid, timezone="Not/AZone").today == date(2026, 3, 15)  # UTC when unknown


def test_an_empty_project_is_healthy(service: ProjectsService) -> None:
    template_id = service.create_template("alice", key="t", name="T", description="",
                                          tasks=[TemplateTask(title="Only task")]).template_id
    project, tasks, _ = service.create_project_from_template("alice", key="p", template_id=template_id, name="P",
                                                             description="")
    service.update_task("alice", project.project_id, tasks[0].task_id, status="done")
    audit = service.audit("alice", project.project_id)
    assert audit.healthy and audit.overdue == audit.blocked == audit.stale == []
    assert audit.summary == "1 task, 1 done; nothing overdue, blocked or stale"
