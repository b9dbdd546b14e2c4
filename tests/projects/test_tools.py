"""The project tools as declared: flags, schemas, previews in words, and a re-run of each side-effect
tool with the same action id (what recovery does for an idempotent tool after a crash)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.config import Settings
from shared.projects.service import ProjectsService
from shared.state.docstore import DocStore
from shared.state.projects_repo import ProjectsRepo
from shared.state.records import UserProfile, UserRecord
from shared.state.users_repo import UsersRepo
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import Tool, ToolArgsError
from tests.projects.conftest import Clock

REGISTRY = default_registry()
READS = ("template_search", "project_get", "projects_list", "project_tasks_list", "project_audit")
WRITES = ("template_create", "project_create_from_template", "project_task_create", "project_task_update",
          "context_document_publish")


def tool(name: str) -> Tool:
    found = REGISTRY.get(name)
    assert found is not None, name
    return found


def run(ctx: ToolContext, name: str, args: dict[str, Any]) -> dict[str, Any]:
    t = tool(name)
    return t.run(ctx, t.validate(args))


def context(store: DocStore, clock: Clock, action_id: str = "act-1", uid: str = "alice") -> ToolContext:
    return ToolContext(uid=uid, run_id="run-1", action_id=action_id, users=UsersRepo(store),
                       settings=Settings(state_backend="sqlite", auth_mode="local"),
                       projects=ProjectsService(ProjectsRepo(store), clock=clock))


def test_flags_and_schemas() -> None:
    for name in READS:
        assert not tool(name).side_effect and not tool(name).idempotent, name
    for name in WRITES:
        assert tool(name).side_effect and tool(name).idempotent, name
    decl = {d.name: d.parameters for d in REGISTRY.declarations()}
    assert decl["project_task_update"]["required"] == ["projectId", "taskId"]
    assert decl["project_task_update"]["properties"]["status"]["anyOf"][0]["enum"] == ["todo", "in_progress",
                                                                                       "blocked", "done"]
    assert decl["project_create_from_template"]["required"] == ["templateId", "name"]
    assert decl["template_create"]["properties"]["tasks"]["minItems"] == 1
    assert decl["projects_list"].get("properties", {}) == {}
    assert decl["project_task_create"]["properties"]["title"]["maxLength"] == 200


@pytest.mark.parametrize(("name", "args", "preview"), [
    ("template_create", {"name": "Product launch", "description": "x",
                         "tasks": [{"title": "Write the brief"}, {"title": "Book the venue", "dueInDays": 5}]},
     'Create project template "Product launch" with 2 default tasks: Write the brief; Book the venue'),
    ("project_create_from_template", {"templateId": "tpl_1", "name": "Spring launch", "description": "Q2 launch"},
     'Create project "Spring launch" from template tpl_1 (its default tasks become the project\'s to-do list); '
     "description: Q2 launch"),
    ("project_task_create", {"projectId": "prj_1", "title": "Order badges", "dueDate": "2026-04-01"},
     'Add task "Order badges" to project prj_1 (status todo, due 2026-04-01)'),
    ("project_task_create", {"projectId": "prj_1", "title": "Order badges"},
     'Add task "Order badges" to project prj_1 (status todo, no due date)'),
    ("project_task_update", {"projectId": "prj_1", "taskId": "tsk_1", "status": "blocked",
                             "blockedReason": "Waiting for the budget", "dueDate": ""},
     'Update task tsk_1 of project prj_1: status → blocked; blocked because "Waiting for the budget"; '
     "remove the due date"),
    ("project_task_update", {"projectId": "prj_1", "taskId": "tsk_1", "title": "New", "dueDate": "2026-05-02"},
     'Update task tsk_1 of project prj_1: title → "New"; due date → 2026-05-02'),
    ("context_document_publish", {"projectId": "prj_1", "title": "Brief", "body": "# Goals\n\nShip it."},
     'Publish context document "Brief" (17 characters of markdown) to project prj_1: # Goals Ship it.'),
])
def test_previews_say_in_words_what_will_change(name: str, args: dict[str, Any], preview: str) -> None:
    t = tool(name)
    assert t.preview(t.validate(args)) == preview


@pytest.mark.parametrize(("name", "args", "field"), [
    ("template_create", {"name": "T", "description": "", "tasks": []}, "tasks"),
    ("template_create", {"name": " ", "description": "", "tasks": [{"title": "a"}]}, "name"),
    ("template_create", {"name": "T", "description": "", "tasks": [{"title": "a", "dueInDays": -1}]},
     "tasks.0.dueInDays"),
    ("template_create", {"name": "T", "description": "", "tasks": [{"title": "a", "owner": "x"}]}, "tasks.0.owner"),
    ("project_task_create", {"projectId": "p", "title": "x" * 201}, "title"),
    ("project_task_create", {"projectId": "p", "title": "t", "dueDate": "2026-02-30"}, "dueDate"),
    ("project_task_update", {"projectId": "p", "taskId": "t", "status": "stuck"}, "status"),
    ("project_tasks_list", {"projectId": "p", "status": "open"}, "status"),
    ("context_document_publish", {"projectId": "p", "title": "t", "body": "x" * 20_001}, "body"),
    ("project_get", {"projectId": "p", "extra": 1}, "extra"),
])
def test_bad_arguments_are_refused_naming_the_field(name: str, args: dict[str, Any], field: str) -> None:
    with pytest.raises(ToolArgsError) as info:
        tool(name).validate(args)
    assert any(p.startswith(f"{field}:") for p in info.value.problems), info.value.problems


def test_a_rerun_with_the_same_action_id_writes_nothing_new(sqlite_docstore: DocStore) -> None:
    clock = Clock()
    ctx = context(sqlite_docstore, clock, "act-tpl")
    args = {"name": "Launch", "description": "d", "tasks": [{"title": "Brief"}, {"title": "Venue"}]}
    first = run(ctx, "template_create", args)
    assert run(ctx, "template_create", args) == first
    template_id = first["template"]["templateId"]

    ctx = context(sqlite_docstore, clock, "act-prj")
    created = run(ctx, "project_create_from_template", {"templateId": template_id, "name": "Spring"})
    pid = created["project"]["projectId"]
    again = run(ctx, "project_create_from_template", {"templateId": template_id, "name": "Spring"})
    assert again["created"] is False and again["project"] == created["project"] and again["tasks"] == created["tasks"]

    ctx = context(sqlite_docstore, clock, "act-task")
    task = run(ctx, "project_task_create", {"projectId": pid, "title": "Badges"})
    assert run(ctx, "project_task_create", {"projectId": pid, "title": "Badges"}) == {**task, "created": False}

    ctx = context(sqlite_docstore, clock, "act-upd")
    update = {"projectId": pid, "taskId": task["task"]["taskId"], "status": "done"}
    assert run(ctx, "project_task_update", update)["changed"] == ["status"]
    assert run(ctx, "project_task_update", update)["task"]["status"] == "done"

    ctx = context(sqlite_docstore, clock, "act-doc")
    doc = run(ctx, "context_document_publish", {"projectId": pid, "title": "Brief", "body": "text"})
    assert run(ctx, "context_document_publish", {"projectId": pid, "title": "Brief", "body": "text"}) == doc

    listed = run(context(sqlite_docstore, clock), "project_get", {"projectId": pid})
    assert listed["taskCount"] == 3 and listed["taskCounts"]["done"] == 1 and len(listed["documents"]) == 1
    assert len(run(ctx, "template_search", {"query": ""})["templates"]) == 1
    assert run(ctx, "projects_list", {})["count"] == 1


def test_the_audit_tool_uses_the_users_time_zone(sqlite_docstore: DocStore) -> None:
    clock = Clock()
    users = UsersRepo(sqlite_docstore)
    users.put_user(UserRecord(uid="alice", profile=UserProfile(timezone="Pacific/Kiritimati")))  # UTC+14
    clock.at -= 25 * 3600  # 11:00 UTC on 14 March is already 01:00 on 15 March in Kiritimati
    ctx = context(sqlite_docstore, clock, "act-t")
    tpl = run(ctx, "template_create", {"name": "T", "description": "", "tasks": [{"title": "a", "dueInDays": 0}]})
    created = run(context(sqlite_docstore, clock, "act-p"), "project_create_from_template",
                  {"templateId": tpl["template"]["templateId"], "name": "P"})
    assert created["tasks"][0]["dueDate"] == "2026-03-15"
    audit = run(ctx, "project_audit", {"projectId": created["project"]["projectId"]})
    assert audit["today"] == "2026-03-15" and audit["overdueCount"] == 0
    clock.at += 86_400
    later = run(ctx, "project_audit", {"projectId": created["project"]["projectId"]})
    assert later["today"] == "2026-03-16" and later["overdue"][0]["daysOverdue"] == 1


def test_without_a_service_the_tools_use_the_users_store(sqlite_docstore: DocStore) -> None:
    ctx = ToolContext(uid="alice", run_id="r", action_id="a", users=UsersRepo(sqlite_docstore),
                      settings=Settings(state_backend="sqlite", auth_mode="local"))
    out = run(ctx, "template_create", {"name": "T", "description": "", "tasks": [{"title": "a"}]})
    assert ProjectsRepo(sqlite_docstore).get_template("alice", out["template"]["templateId"]) is not None
