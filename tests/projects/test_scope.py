"""``entityId`` scoping: resolution for the owner only, and which tool calls stay inside."""

from __future__ import annotations

import pytest

from shared.projects.scope import EntityScope, entity_scope, parse_entity_id
from shared.projects.service import ProjectsService
from shared.state.docstore import DocStore
from shared.state.project_records import TemplateTask
from shared.state.projects_repo import ProjectsRepo


def make_project(service: ProjectsService, uid: str = "alice") -> tuple[str, str, str]:
    template = service.create_template(uid, key=f"t-{uid}", name="Launch", description="",
                                       tasks=[TemplateTask(title="Brief"), TemplateTask(title="Venue")])
    project, tasks, _ = service.create_project_from_template(uid, key=f"p-{uid}", template_id=template.template_id,
                                                             name="Spring launch", description="")
    return project.project_id, tasks[0].task_id, tasks[1].task_id


def test_a_project_and_a_task_resolve_for_their_owner(service: ProjectsService, docstore: DocStore) -> None:
    pid, tid, _ = make_project(service)
    scope = entity_scope(docstore, "alice", pid)
    assert scope == EntityScope(uid="alice", kind="project", project_id=pid, project_name="Spring launch")
    assert scope.entity_id == pid
    assert scope.describe() == f'The user is working in project "Spring launch" (projectId {pid}).'
    task_scope = entity_scope(ProjectsRepo(docstore), "alice", f"{pid}/{tid}")
    assert task_scope is not None and task_scope.kind == "task" and task_scope.task_id == tid
    assert task_scope.task_title == "Brief" and task_scope.entity_id == f"{pid}/{tid}"
    assert "task \"Brief\"" in task_scope.describe()


def test_another_users_or_unknown_entities_resolve_to_none(service: ProjectsService, docstore: DocStore) -> None:
    pid, tid, _ = make_project(service)
    bob_pid, _, _ = make_project(service, "bob")
    assert entity_scope(docstore, "bob", pid) is None
    assert entity_scope(docstore, "bob", f"{pid}/{tid}") is None
    assert entity_scope(docstore, "alice", bob_pid) is None
    assert entity_scope(docstore, "bob", bob_pid) is not None
    assert entity_scope(docstore, "alice", "prj_missing") is None
    assert entity_scope(docstore, "alice", f"{pid}/tsk_missing") is None
    for malformed in ("", "/", f"{pid}/", f"/{tid}", f"{pid}/{tid}/x", f"{pid}/../{tid}", "../bob", "a b"):
        assert entity_scope(docstore, "alice", malformed) is None, malformed


def test_parse_entity_id() -> None:
    assert parse_entity_id("prj_1") == ("prj_1", None)
    assert parse_entity_id(" prj_1/tsk_2 ") == ("prj_1", "tsk_2")
    assert parse_entity_id("prj_1/tasks/tsk_2") is None


PROJECT = EntityScope(uid="alice", kind="project", project_id="prj_a", project_name="A")
TASK = EntityScope(uid="alice", kind="task", project_id="prj_a", project_name="A", task_id="tsk_1",
                   task_title="Brief")


@pytest.mark.parametrize(("scope", "tool", "args", "inside"), [
    (PROJECT, "project_get", {"projectId": "prj_a"}, True),
    (PROJECT, "project_audit", {"projectId": "prj_b"}, False),
    (PROJECT, "project_task_update", {"projectId": "prj_a", "taskId": "tsk_9", "status": "done"}, True),
    (PROJECT, "project_task_update", {"projectId": "prj_b", "taskId": "tsk_1", "status": "done"}, False),
    (PROJECT, "context_document_publish", {"projectId": "prj_b", "title": "x", "body": "y"}, False),
    (PROJECT, "project_create_from_template", {"templateId": "tpl_1", "name": "New"}, False),
    (PROJECT, "projects_list", {}, True),
    (PROJECT, "template_search", {"query": "launch"}, True),
    (PROJECT, "save_memory", {"text": "likes tea"}, True),
    (TASK, "project_task_update", {"projectId": "prj_a", "taskId": "tsk_1", "status": "done"}, True),
    (TASK, "project_task_update", {"projectId": "prj_a", "taskId": "tsk_2", "status": "done"}, False),
    (TASK, "project_task_create", {"projectId": "prj_a", "title": "Follow-up"}, True),
    (TASK, "project_tasks_list", {"projectId": "prj_a"}, True),
    (TASK, "project_tasks_list", {"projectId": "prj_b"}, False),
])
def test_allows_keeps_project_tool_calls_inside_the_entity(scope: EntityScope, tool: str, args: dict[str, str],
                                                           inside: bool) -> None:
    assert scope.allows(tool, args) is inside
    reason = scope.outside_reason(tool, args)
    assert (reason is None) is inside
    if reason is not None:
        assert tool in reason
