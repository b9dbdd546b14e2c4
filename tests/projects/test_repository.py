"""The projects repository on both stores (SQLite and the Firestore emulator): layout, atomic
creation, retried creations, list order and filters, transactional updates, ownership."""

from __future__ import annotations

from datetime import date

import pytest

from shared.state import paths
from shared.state.docstore import DocStore, Write
from shared.state.project_records import (
    ContextDocumentRecord,
    ProjectRecord,
    ProjectTaskRecord,
    TemplateRecord,
    TemplateTask,
)
from shared.state.projects_repo import ProjectsRepo, is_valid_id
from shared.state.records import SchemaVersionError


def project(pid: str = "prj_1", uid: str = "alice", at: float = 100.0) -> ProjectRecord:
    return ProjectRecord(project_id=pid, uid=uid, name=f"Project {pid}", template_id="tpl_1", created_at=at,
                         updated_at=at)


def task(tid: str, order: int, pid: str = "prj_1", uid: str = "alice", status: str = "todo") -> ProjectTaskRecord:
    return ProjectTaskRecord(task_id=tid, project_id=pid, uid=uid, title=f"Task {tid}", order=order,
                             status=status, created_at=100.0 + order, updated_at=100.0 + order)  # type: ignore[arg-type]


def test_the_layout_is_per_user_with_camel_case_fields(repo: ProjectsRepo, docstore: DocStore) -> None:
    repo.put_template(TemplateRecord(template_id="tpl_1", uid="alice", name="Launch",
                                     tasks=[TemplateTask(title="Plan", due_in_days=3)]))
    assert repo.create_project(project(), [task("t1", 1)])
    repo.put_document(ContextDocumentRecord(document_id="doc_1", project_id="prj_1", uid="alice", title="Brief",
                                            body="# Goals"))
    tpl = docstore.get("users/alice/templates/tpl_1")
    assert tpl is not None and tpl.data["tasks"] == [{"title": "Plan", "description": "", "dueInDays": 3}]
    assert tpl.data["schemaVersion"] == 1
    prj = docstore.get("users/alice/projects/prj_1")
    assert prj is not None and prj.data["templateId"] == "tpl_1" and prj.data["status"] == "active"
    tsk = docstore.get("users/alice/projects/prj_1/tasks/t1")
    assert tsk is not None and tsk.data["status"] == "todo" and tsk.data["projectId"] == "prj_1"
    doc = docstore.get("users/alice/projects/prj_1/documents/doc_1")
    assert doc is not None and doc.data["kind"] == "context" and doc.data["body"] == "# Goals"
    assert "publishedAt" in doc.data
    assert paths.project_task("alice", "prj_1", "t1") == tsk.path


def test_a_project_and_its_tasks_are_created_together_and_never_twice(repo: ProjectsRepo) -> None:
    assert repo.create_project(project(), [task("t1", 1), task("t2", 2)])
    # A retried creation (same id) writes nothing, not even a task that was not there.
    assert not repo.create_project(project(), [task("t1", 1), task("t3", 3)])
    assert [t.task_id for t in repo.list_tasks("alice", "prj_1")] == ["t1", "t2"]
    assert repo.get_task("alice", "prj_1", "t3") is None


def test_tasks_come_in_list_order_and_filter_by_status(repo: ProjectsRepo) -> None:
    repo.create_project(project(), [task("b", 2), task("a", 1, status="blocked"), task("c", 3, status="blocked")])
    assert repo.create_task(task("d", 4, status="done"))
    assert not repo.create_task(task("d", 9))  # retried: the first one stays
    assert [t.task_id for t in repo.list_tasks("alice", "prj_1")] == ["a", "b", "c", "d"]
    assert [t.task_id for t in repo.list_tasks("alice", "prj_1", "blocked")] == ["a", "c"]
    assert [t.task_id for t in repo.list_tasks("alice", "prj_1", "in_progress")] == []
    got = repo.get_task("alice", "prj_1", "d")
    assert got is not None and got.order == 4 and got.status == "done"


def test_update_task_is_a_transaction_and_missing_tasks_answer_none(repo: ProjectsRepo) -> None:
    repo.create_project(project(), [task("t1", 1)])
    updated = repo.update_task("alice", "prj_1", "t1",
                               lambda t: t.model_copy(update={"status": "done", "due_date": date(2026, 4, 1)}))
    assert updated is not None and updated.status == "done"
    stored = repo.get_task("alice", "prj_1", "t1")
    assert stored is not None and stored.status == "done" and stored.due_date == date(2026, 4, 1)
    assert repo.update_task("alice", "prj_1", "nope", lambda t: t) is None

    def refuse(t: ProjectTaskRecord) -> ProjectTaskRecord:
        t.title = "half-written"
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        repo.update_task("alice", "prj_1", "t1", refuse)
    again = repo.get_task("alice", "prj_1", "t1")
    assert again is not None and again.title == "Task t1"  # nothing half-written


def test_lists_are_newest_first(repo: ProjectsRepo) -> None:
    for i in range(3):
        repo.put_template(TemplateRecord(template_id=f"tpl_{i}", uid="alice", name=f"T{i}", created_at=10.0 + i))
        repo.create_project(project(f"prj_{i}", at=10.0 + i), [])
        repo.put_document(ContextDocumentRecord(document_id=f"doc_{i}", project_id="prj_0", uid="alice",
                                                title=f"D{i}", body="x", published_at=10.0 + i))
    assert [t.template_id for t in repo.list_templates("alice")] == ["tpl_2", "tpl_1", "tpl_0"]
    assert [p.project_id for p in repo.list_projects("alice")] == ["prj_2", "prj_1", "prj_0"]
    assert [d.document_id for d in repo.list_documents("alice", "prj_0")] == ["doc_2", "doc_1", "doc_0"]


def test_another_users_objects_are_not_found(repo: ProjectsRepo) -> None:
    repo.put_template(TemplateRecord(template_id="tpl_1", uid="alice", name="Launch"))
    repo.create_project(project(), [task("t1", 1)])
    assert repo.get_project("bob", "prj_1") is None
    assert repo.get_task("bob", "prj_1", "t1") is None
    assert repo.get_template("bob", "tpl_1") is None
    assert repo.list_projects("bob") == [] and repo.list_templates("bob") == []
    assert repo.list_tasks("bob", "prj_1") == []
    assert repo.update_task("bob", "prj_1", "t1", lambda t: t) is None
    assert repo.get_project("alice", "prj_1") is not None


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "prj_1/tasks/t1", "-x", "a" * 129, "__x__", "x y", "é"])
def test_ids_that_are_not_plain_document_ids_never_become_paths(repo: ProjectsRepo, bad: str) -> None:
    repo.create_project(project(), [task("t1", 1)])
    assert not is_valid_id(bad)
    assert repo.get_project("alice", bad) is None
    assert repo.get_task("alice", bad, "t1") is None and repo.get_task("alice", "prj_1", bad) is None
    assert repo.get_template("alice", bad) is None
    assert repo.list_tasks("alice", bad) == [] and repo.list_documents("alice", bad) == []
    with pytest.raises(ValueError):
        repo.create_task(task(bad, 1))


def test_a_record_from_a_newer_runtime_is_refused(repo: ProjectsRepo, docstore: DocStore) -> None:
    repo.create_project(project(), [])
    docstore.commit([Write("update", "users/alice/projects/prj_1", {"schemaVersion": 99})])
    with pytest.raises(SchemaVersionError):
        repo.get_project("alice", "prj_1")
