"""A user's projects workspace: templates, projects, project tasks and context documents.

Every read and write takes the owner's ``uid`` and stays under ``users/{uid}/``, so an id of
another user's object is simply not found. Ids come from the model (tool arguments) or a request
(``entityId``): an id that is not a plain document id (``/``, ``.``, ``..``, reserved ``__x__``
names, empty, too long) never becomes a path; reads answer ``None`` for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from shared.errors import PreconditionFailed
from shared.state import paths
from shared.state.docstore import DocStore, Query, Transaction, Write
from shared.state.project_records import (
    ContextDocumentRecord,
    ProjectRecord,
    ProjectTaskRecord,
    ProjectTaskStatus,
    TemplateRecord,
)

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")

MAX_LISTED_TEMPLATES = 200
MAX_LISTED_PROJECTS = 100
MAX_TASKS_PER_PROJECT = 500
MAX_LISTED_DOCUMENTS = 50


def is_valid_id(value: str) -> bool:
    """A plain document id: letters, digits, ``_`` and ``-``, at most 128 characters."""
    return bool(_ID.match(value))


def _require_ids(*ids: str) -> None:
    for value in ids:
        if not is_valid_id(value):
            raise ValueError(f"not a valid id: {value!r}")


class ProjectsRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    # -- templates ---------------------------------------------------------------------------

    def get_template(self, uid: str, template_id: str) -> TemplateRecord | None:
        if not is_valid_id(template_id):
            return None
        doc = self.store.get(paths.template(uid, template_id))
        return None if doc is None else TemplateRecord.from_doc(doc.data, doc.path)

    def put_template(self, template: TemplateRecord) -> None:
        """Idempotent for a given template id (a retried call writes the same document)."""
        _require_ids(template.template_id)
        self.store.commit([Write("set", paths.template(template.uid, template.template_id), template.to_doc())])

    def list_templates(self, uid: str, limit: int = MAX_LISTED_TEMPLATES) -> list[TemplateRecord]:
        docs = self.store.query(Query(paths.templates(uid), order_by="createdAt", descending=True, limit=limit))
        return [TemplateRecord.from_doc(d.data, d.path) for d in docs]

    # -- projects ----------------------------------------------------------------------------

    def get_project(self, uid: str, project_id: str) -> ProjectRecord | None:
        if not is_valid_id(project_id):
            return None
        doc = self.store.get(paths.project(uid, project_id))
        return None if doc is None else ProjectRecord.from_doc(doc.data, doc.path)

    def list_projects(self, uid: str, limit: int = MAX_LISTED_PROJECTS) -> list[ProjectRecord]:
        docs = self.store.query(Query(paths.projects(uid), order_by="createdAt", descending=True, limit=limit))
        return [ProjectRecord.from_doc(d.data, d.path) for d in docs]

    def create_project(self, project: ProjectRecord, tasks: Sequence[ProjectTaskRecord]) -> bool:
        """The project and its first tasks in one commit; ``False`` (nothing written) when a
        project with this id exists already (a retried creation)."""
        _require_ids(project.project_id, *(t.task_id for t in tasks))
        uid, pid = project.uid, project.project_id
        writes = [Write("create", paths.project(uid, pid), project.to_doc())]
        writes += [Write("create", paths.project_task(uid, pid, t.task_id), t.to_doc()) for t in tasks]
        try:
            self.store.commit(writes)
        except PreconditionFailed:
            return False
        return True

    # -- tasks -------------------------------------------------------------------------------

    def get_task(self, uid: str, project_id: str, task_id: str) -> ProjectTaskRecord | None:
        if not (is_valid_id(project_id) and is_valid_id(task_id)):
            return None
        doc = self.store.get(paths.project_task(uid, project_id, task_id))
        return None if doc is None else ProjectTaskRecord.from_doc(doc.data, doc.path)

    def list_tasks(self, uid: str, project_id: str, status: ProjectTaskStatus | None = None,
                   limit: int = MAX_TASKS_PER_PROJECT) -> list[ProjectTaskRecord]:
        """The project's tasks in list order (``order``, then creation)."""
        if not is_valid_id(project_id):
            return []
        if status is None:
            docs = self.store.query(Query(paths.project_tasks(uid, project_id), order_by="order", limit=limit))
        else:
            docs = self.store.query(Query(paths.project_tasks(uid, project_id), where=(("status", status),),
                                          order_by="order", limit=limit))
        tasks = [ProjectTaskRecord.from_doc(d.data, d.path) for d in docs]
        return sorted(tasks, key=lambda t: (t.order, t.created_at, t.task_id))

    def create_task(self, task: ProjectTaskRecord) -> bool:
        """``False`` (nothing written) when a task with this id exists already (a retried call)."""
        _require_ids(task.project_id, task.task_id)
        try:
            self.store.commit([Write("create", paths.project_task(task.uid, task.project_id, task.task_id),
                                     task.to_doc())])
        except PreconditionFailed:
            return False
        return True

    def update_task(self, uid: str, project_id: str, task_id: str,
                    change: Callable[[ProjectTaskRecord], ProjectTaskRecord]) -> ProjectTaskRecord | None:
        """Read, change and write the task in one transaction (a concurrent update is re-read, never
        lost); ``None`` when there is no such task. ``change`` may raise to write nothing."""
        if not (is_valid_id(project_id) and is_valid_id(task_id)):
            return None
        path = paths.project_task(uid, project_id, task_id)

        def txn(tx: Transaction) -> ProjectTaskRecord | None:
            doc = tx.get(path)
            if doc is None:
                return None
            updated = change(ProjectTaskRecord.from_doc(doc.data, doc.path))
            tx.write(Write("set", path, updated.to_doc()))
            return updated

        return self.store.run_transaction(txn)

    # -- context documents -------------------------------------------------------------------

    def put_document(self, document: ContextDocumentRecord) -> None:
        """Idempotent for a given document id (a retried publish writes the same document)."""
        _require_ids(document.project_id, document.document_id)
        path = paths.project_document(document.uid, document.project_id, document.document_id)
        self.store.commit([Write("set", path, document.to_doc())])

    def list_documents(self, uid: str, project_id: str,
                       limit: int = MAX_LISTED_DOCUMENTS) -> list[ContextDocumentRecord]:
        if not is_valid_id(project_id):
            return []
        docs = self.store.query(Query(paths.project_documents(uid, project_id), order_by="publishedAt",
                                      descending=True, limit=limit))
        return [ContextDocumentRecord.from_doc(d.data, d.path) for d in docs]
