"""Every project tool through the agent loop (scripted model, both stores): the project_create
sequence, the read and update tools, the approval path of a supervised user, another user's
project, and bad arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.api import ApproveRequest, RunRequest
from shared.models.base import ModelRequest, ModelResponse, Turn
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.projects.service import ProjectsService
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from shared.state.project_records import TemplateTask
from shared.state.projects_repo import ProjectsRepo
from shared.state.records import RunResult
from shared.token_usage import Usage
from tests.messages import deliver_published
from tests.projects.conftest import MakeRuntime

Answer = Callable[[ModelRequest], ModelResponse]


def last_response(request: ModelRequest) -> dict[str, Any]:
    fr = request.turns[-1].parts[0].function_response
    assert fr is not None, "the previous model turn called no tool"
    return fr.response


def after(make: Callable[[dict[str, Any]], Turn]) -> Answer:
    """A script item whose turn is built from the previous tool result (ids are minted at run time)."""
    def answer(request: ModelRequest) -> ModelResponse:
        return ModelResponse(turn=make(last_response(request)), usage=Usage(requests=1, input_tokens=10,
                                                                           output_tokens=5, total_tokens=15))
    return answer


def drive(rt: Runtime, prompt: str, uid: str = "alice") -> tuple[RunResult, list[dict[str, Any]]]:
    live: list[dict[str, Any]] = []
    started = rt.agent.start(uid, RunRequest(prompt=prompt))
    live.extend(started.first_events)
    return rt.agent.run(rt.agent.context(started, listener=live.append)), live


def told(model: ScriptedModel, request_index: int) -> dict[str, Any]:
    """What the model was told by the tool call answered in request ``request_index``."""
    return last_response(model.requests[request_index])


def seeded_project(store: DocStore, uid: str = "alice") -> tuple[ProjectsService, str, list[str]]:
    service = ProjectsService(ProjectsRepo(store))
    template = service.create_template(uid, key=f"seed-t-{uid}", name="Launch", description="",
                                       tasks=[TemplateTask(title="Write the brief"), TemplateTask(title="Book venue")])
    project, tasks, _ = service.create_project_from_template(uid, key=f"seed-p-{uid}", name="Spring launch",
                                                             template_id=template.template_id, description="")
    return service, project.project_id, [t.task_id for t in tasks]


def test_the_project_create_sequence_runs_through_the_loop(make_runtime: MakeRuntime) -> None:
    model = ScriptedModel([
        calls_turn(call("template_search", {"query": "product launch"})),
        after(lambda r: calls_turn(call("template_create", {
            "name": "Product launch", "description": "Taking a product to market",
            "tasks": [{"title": "Write the brief", "dueInDays": 3}, {"title": "Book the venue"}]}))),
        after(lambda r: calls_turn(call("project_create_from_template", {
            "templateId": r["template"]["templateId"], "name": "Spring launch"}))),
        after(lambda r: calls_turn(call("context_document_publish", {
            "projectId": r["project"]["projectId"], "title": "Project brief",
            "body": "# Spring launch\n\nGoal: 200 sign-ups."}))),
        text_turn("Your project is ready."),
    ])
    rt = make_runtime(model)
    result, live = drive(rt, "Set up a project for our spring product launch")
    assert result.status == "completed" and result.summary == "Your project is ready."
    model.assert_complete()
    assert told(model, 1) == {"templates": [], "count": 0, "hint": "no template matches; template_create makes one"}
    template = told(model, 2)["template"]
    assert template["taskCount"] == 2 and template["tasks"][0] == {"title": "Write the brief", "description": "",
                                                                   "dueInDays": 3}
    created = told(model, 3)
    assert created["created"] is True and created["project"]["templateId"] == template["templateId"]
    assert [t["title"] for t in created["tasks"]] == ["Write the brief", "Book the venue"]
    assert created["tasks"][0]["dueDate"] is not None and created["tasks"][1]["dueDate"] is None
    published = told(model, 4)
    assert published["published"] is True and published["document"]["title"] == "Project brief"

    service = ProjectsService(ProjectsRepo(rt.store))
    (project,) = service.list_projects("alice")
    assert project.name == "Spring launch" and project.run_id == result.run_id
    assert [t.status for t in service.list_tasks("alice", project.project_id)] == ["todo", "todo"]
    (document,) = service.list_documents("alice", project.project_id)
    assert document.body.startswith("# Spring launch") and document.kind == "context"
    actions = rt.runs.list_actions(result.run_id)
    assert [(a.tool, a.status, a.side_effect, a.idempotent) for a in actions] == [
        ("template_search", "completed", False, False), ("template_create", "completed", True, True),
        ("project_create_from_template", "completed", True, True),
        ("context_document_publish", "completed", True, True)]
    calls = [e for e in live if e["type"] == "tool_call" and e["status"] == "executing"]
    assert 'Create project "Spring launch" from template' in calls[2]["preview"]


def test_the_read_and_update_tools_run_through_the_loop(make_runtime: MakeRuntime, docstore: DocStore) -> None:
    _, pid, tids = seeded_project(docstore)
    model = ScriptedModel([
        calls_turn(call("projects_list", {})),
        after(lambda r: calls_turn(call("project_get", {"projectId": r["projects"][0]["projectId"]}))),
        after(lambda r: calls_turn(call("project_tasks_list", {"projectId": r["project"]["projectId"],
                                                               "status": "todo"}))),
        after(lambda r: calls_turn(call("project_task_create", {"projectId": r["projectId"], "title": "Order badges",
                                                                "dueDate": "2020-01-31"}))),
        calls_turn(call("project_task_update", {"projectId": pid, "taskId": tids[0], "status": "blocked",
                                                "blockedReason": "Waiting for the budget"})),
        calls_turn(call("project_audit", {"projectId": pid})),
        text_turn("One task is overdue and one is blocked."),
    ])
    rt = make_runtime(model)
    result, _ = drive(rt, "How is my launch project doing?")
    assert result.status == "completed", result.error
    model.assert_complete()
    listed = told(model, 1)
    assert listed["count"] == 1 and listed["projects"][0]["name"] == "Spring launch"
    got = told(model, 2)
    assert got["taskCount"] == 2 and got["taskCounts"] == {"todo": 2, "in_progress": 0, "blocked": 0, "done": 0}
    assert got["documents"] == []
    todo = told(model, 3)
    assert [t["taskId"] for t in todo["tasks"]] == tids and todo["count"] == 2
    new_task = told(model, 4)["task"]
    assert new_task["status"] == "todo" and new_task["dueDate"] == "2020-01-31"
    update = told(model, 5)
    assert update["changed"] == ["status", "blocked_reason"] and update["task"]["status"] == "blocked"
    audit = told(model, 6)
    assert audit["overdueCount"] == 1 and audit["overdue"][0]["taskId"] == new_task["taskId"]
    assert audit["blockedCount"] == 1 and audit["blocked"][0]["blockedReason"] == "Waiting for the budget"
    assert audit["staleCount"] == 0 and audit["healthy"] is False
    kinds = [a.tool for a in rt.runs.list_actions(result.run_id) if a.status == "completed"]
    assert kinds == ["projects_list", "project_get", "project_tasks_list", "project_task_create",
                     "project_task_update", "project_audit"]


def test_a_supervised_user_approves_a_task_update(make_runtime: MakeRuntime, docstore: DocStore) -> None:
    service, pid, tids = seeded_project(docstore)
    model = ScriptedModel([
        calls_turn(call("project_task_update", {"projectId": pid, "taskId": tids[1], "status": "done"})),
        after(lambda r: text_turn(f"Marked \"{r['task']['title']}\" done.")),
    ])
    rt = make_runtime(model, trust="supervised")
    result, _ = drive(rt, "The venue is booked")
    assert result.status == "awaiting_confirmation" and result.approval is not None
    assert result.approval.preview == f"Update task {tids[1]} of project {pid}: status → done"
    assert service.repo.get_task("alice", pid, tids[1]).status == "todo"  # type: ignore[union-attr]

    from shared.agent.approvals import decide

    decide(rt.services, rt.dispatcher, "alice", ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver_published(rt, copies=2)  # delivered twice, as Pub/Sub may: the update runs once
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    assert snap.run.result is not None and snap.run.result.summary == 'Marked "Book venue" done.'
    assert service.repo.get_task("alice", pid, tids[1]).status == "done"  # type: ignore[union-attr]
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "completed" and action.attempts == 1
    model.assert_complete()


def test_another_users_project_is_not_found_by_the_tools(make_runtime: MakeRuntime, docstore: DocStore) -> None:
    service, pid, tids = seeded_project(docstore, uid="alice")
    model = ScriptedModel([
        calls_turn(call("project_get", {"projectId": pid})),
        calls_turn(call("project_task_update", {"projectId": pid, "taskId": tids[0], "status": "done"})),
        calls_turn(call("projects_list", {})),
        text_turn("I cannot find that project."),
    ])
    rt = make_runtime(model, uid="bob")
    result, _ = drive(rt, "close alice's task", uid="bob")
    assert result.status == "completed"
    for i in (1, 2):
        error = told(model, i)["error"]
        assert error.startswith(f"project {pid!r} not found"), error
    assert told(model, 3) == {"projects": [], "count": 0}
    assert service.repo.get_task("alice", pid, tids[0]).status == "todo"  # type: ignore[union-attr]
    assert service.repo.get_task("bob", pid, tids[0]) is None


def test_an_unknown_project_or_task_is_told_to_the_model(make_runtime: MakeRuntime, docstore: DocStore) -> None:
    _, pid, _ = seeded_project(docstore)
    model = ScriptedModel([
        calls_turn(call("project_tasks_list", {"projectId": "prj_nope"})),
        calls_turn(call("project_audit", {"projectId": "../../users/bob"})),
        calls_turn(call("project_task_update", {"projectId": pid, "taskId": "tsk_nope", "status": "done"})),
        calls_turn(call("project_create_from_template", {"templateId": "tpl_nope", "name": "X"})),
        text_turn("Nothing found."),
    ])
    rt = make_runtime(model)
    result, _ = drive(rt, "audit")
    assert result.status == "completed"
    assert "project 'prj_nope' not found" in told(model, 1)["error"]
    assert "not found" in told(model, 2)["error"]
    assert f"task 'tsk_nope' not found in project {pid!r}" in told(model, 3)["error"]
    assert "template 'tpl_nope' not found" in told(model, 4)["error"]
    assert [a.outcome for a in rt.runs.list_actions(result.run_id)] == ["error"] * 4


def test_a_bad_status_fails_the_run_before_anything_is_written(make_runtime: MakeRuntime) -> None:
    model = ScriptedModel([calls_turn(call("project_task_update", {"projectId": "prj_x", "taskId": "t",
                                                                   "status": "stuck"}))])
    rt = make_runtime(model)
    result, live = drive(rt, "mark it stuck")
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "INVALID_TOOL_ARGS" and "status" in result.error.message
    assert "'todo', 'in_progress', 'blocked' or 'done'" in result.error.message
    assert live[-1]["type"] == "error"


def test_a_bad_due_date_fails_the_run_naming_it(make_runtime: MakeRuntime) -> None:
    model = ScriptedModel([calls_turn(call("project_task_create", {"projectId": "prj_x", "title": "t",
                                                                   "dueDate": "next Friday"}))])
    rt = make_runtime(model, trust="supervised")
    result, _ = drive(rt, "add a task")
    assert result.status == "failed" and result.error is not None and result.error.code == "INVALID_TOOL_ARGS"
    assert "dueDate" in result.error.message and "YYYY-MM-DD" in result.error.message
    (action,) = rt.runs.list_actions(result.run_id)  # no approval is asked for a call that cannot run
    assert action.status == "failed" and action.approval_id is None
