"""The rules of a user's projects workspace, over :class:`~shared.state.projects_repo.ProjectsRepo`.

The tools (``shared/tools/project_tools.py``) call this; so can any other component (the planner's
``entityId`` scoping uses :mod:`shared.projects.scope`). Ids of new objects are derived from a key
the caller gives (the tools pass their action id), so a retried write rewrites or finds the same
document instead of making a second one. Every failure the model should hear about is a
:class:`~shared.errors.ToolError` with a message that names what was wrong.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from shared.errors import ToolError
from shared.state.project_records import (
    ContextDocumentRecord,
    ProjectRecord,
    ProjectTaskRecord,
    ProjectTaskStatus,
    TemplateRecord,
    TemplateTask,
)
from shared.state.projects_repo import MAX_TASKS_PER_PROJECT, ProjectsRepo

STALE_AFTER_DAYS = 14
"""A task that is not done and was not updated for this many days is stale (project_audit)."""
DAY_S = 86_400.0
_WORD = re.compile(r"\w+", re.UNICODE)

Clock = Callable[[], float]


class ProjectNotFound(ToolError):
    """No such project for this user (another user's project is not found either)."""

    def __init__(self, project_id: str) -> None:
        super().__init__(f"project {project_id!r} not found (projects_list shows the user's projects)")
        self.project_id = project_id


class TaskNotFound(ToolError):
    def __init__(self, project_id: str, task_id: str) -> None:
        super().__init__(f"task {task_id!r} not found in project {project_id!r} "
                         "(project_tasks_list shows its tasks)")


class TemplateNotFound(ToolError):
    def __init__(self, template_id: str) -> None:
        super().__init__(f"template {template_id!r} not found (template_search shows the user's templates)")


def derived_id(prefix: str, key: str) -> str:
    """A document id that is the same for the same key: ``<prefix>_<20 hex>``."""
    return f"{prefix}_{hashlib.sha256(key.encode()).hexdigest()[:20]}"


def iso(ts: float) -> str:
    """Epoch seconds as an ISO 8601 UTC time (what tool results show)."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def local_today(ts: float, timezone: str | None) -> date:
    """The calendar date at ``ts`` in the user's time zone (UTC when unknown or invalid)."""
    zone: ZoneInfo | None = None
    if timezone:
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            zone = None
    return datetime.fromtimestamp(ts, zone or UTC).date()


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 1}


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    def out(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True)


class TaskRef(_View):
    """A task as the audit lists it."""

    task_id: str
    title: str
    status: ProjectTaskStatus
    due_date: date | None = None
    blocked_reason: str | None = None
    updated_at: str
    days_overdue: int | None = None
    days_since_update: int


class ProjectAudit(_View):
    """The health of one project on one day (``project_audit``)."""

    project_id: str
    name: str
    today: date
    stale_after_days: int = STALE_AFTER_DAYS
    total_tasks: int
    by_status: dict[str, int]
    overdue_count: int
    blocked_count: int
    stale_count: int
    overdue: list[TaskRef]
    blocked: list[TaskRef]
    stale: list[TaskRef]
    healthy: bool
    summary: str


class ProjectsService:
    def __init__(self, repo: ProjectsRepo, clock: Clock = time.time) -> None:
        self.repo = repo
        self.clock = clock

    # -- templates ---------------------------------------------------------------------------

    def search_templates(self, uid: str, query: str, limit: int = 10) -> list[TemplateRecord]:
        """Templates whose name, description or task titles share a word with ``query`` (best
        first, then newest); every template (newest first) for a query without words."""
        wanted = _words(query)
        templates = self.repo.list_templates(uid)
        if not wanted:
            return templates[:limit]
        scored: list[tuple[int, float, TemplateRecord]] = []
        for t in templates:
            text = " ".join([t.name, t.description, *(task.title for task in t.tasks)])
            score = len(wanted & _words(text)) + 2 * len(wanted & _words(t.name))
            if score:
                scored.append((score, t.created_at, t))
        scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
        return [t for _, _, t in scored[:limit]]

    def create_template(self, uid: str, *, key: str, name: str, description: str,
                        tasks: Sequence[TemplateTask], run_id: str | None = None) -> TemplateRecord:
        if not tasks:
            raise ToolError("a template needs at least one default task")
        at = self.clock()
        template = TemplateRecord(template_id=derived_id("tpl", key), uid=uid, name=name, description=description,
                                  tasks=list(tasks), run_id=run_id, created_at=at, updated_at=at)
        self.repo.put_template(template)
        return template

    # -- projects ----------------------------------------------------------------------------

    def get_project(self, uid: str, project_id: str) -> ProjectRecord:
        project = self.repo.get_project(uid, project_id)
        if project is None:
            raise ProjectNotFound(project_id)
        return project

    def create_project_from_template(self, uid: str, *, key: str, template_id: str, name: str,
                                     description: str | None, timezone: str | None = None,
                                     run_id: str | None = None) -> tuple[ProjectRecord, list[ProjectTaskRecord], bool]:
        """The project and one ``todo`` task per default task of the template, in one commit.

        Returns ``(project, tasks, created)``; a retried call (same key) finds the project it made
        and returns it with ``created=False`` (its tasks as they are now)."""
        template = self.repo.get_template(uid, template_id)
        if template is None:
            raise TemplateNotFound(template_id)
        project_id = derived_id("prj", key)
        existing = self.repo.get_project(uid, project_id)
        if existing is not None:
            return existing, self.repo.list_tasks(uid, project_id), False
        at = self.clock()
        today = local_today(at, timezone)
        project = ProjectRecord(project_id=project_id, uid=uid, name=name,
                                description=template.description if description is None else description,
                                template_id=template.template_id, run_id=run_id, created_at=at, updated_at=at)
        tasks = [ProjectTaskRecord(task_id=derived_id("tsk", f"{project_id}/{i}"), project_id=project_id, uid=uid,
                                   title=t.title, description=t.description, order=i,
                                   due_date=None if t.due_in_days is None else today + timedelta(days=t.due_in_days),
                                   created_at=at, updated_at=at)
                 for i, t in enumerate(template.tasks, start=1)]
        if not self.repo.create_project(project, tasks):  # a concurrent retry won the race
            return self.get_project(uid, project_id), self.repo.list_tasks(uid, project_id), False
        return project, tasks, True

    def list_projects(self, uid: str) -> list[ProjectRecord]:
        return self.repo.list_projects(uid)

    # -- tasks -------------------------------------------------------------------------------

    def list_tasks(self, uid: str, project_id: str, status: ProjectTaskStatus | None = None
                   ) -> list[ProjectTaskRecord]:
        self.get_project(uid, project_id)
        return self.repo.list_tasks(uid, project_id, status)

    def create_task(self, uid: str, project_id: str, *, key: str, title: str, description: str,
                    due_date: date | None) -> tuple[ProjectTaskRecord, bool]:
        """A new ``todo`` task at the end of the list; a retried call (same key) returns the task it
        made (``created=False``)."""
        self.get_project(uid, project_id)
        task_id = derived_id("tsk", key)
        existing = self.repo.get_task(uid, project_id, task_id)
        if existing is not None:
            return existing, False
        tasks = self.repo.list_tasks(uid, project_id)
        if len(tasks) >= MAX_TASKS_PER_PROJECT:
            raise ToolError(f"project {project_id!r} has {len(tasks)} tasks, the most a project may hold")
        at = self.clock()
        task = ProjectTaskRecord(task_id=task_id, project_id=project_id, uid=uid, title=title,
                                 description=description, due_date=due_date,
                                 order=max((t.order for t in tasks), default=0) + 1, created_at=at, updated_at=at)
        if not self.repo.create_task(task):
            found = self.repo.get_task(uid, project_id, task_id)
            assert found is not None
            return found, False
        return task, True

    def update_task(self, uid: str, project_id: str, task_id: str, *, status: ProjectTaskStatus | None = None,
                    title: str | None = None, description: str | None = None, due_date: date | None = None,
                    clear_due_date: bool = False, blocked_reason: str | None = None
                    ) -> tuple[ProjectTaskRecord, list[str]]:
        """Apply the given changes; returns the task and the names of the fields that changed.

        Rules: a blocked task needs a reason (given now or kept from before); leaving ``blocked``
        drops the reason; a reason alone is only accepted for a task that is (or becomes) blocked."""
        if all(v is None for v in (status, title, description, due_date, blocked_reason)) and not clear_due_date:
            raise ToolError("nothing to change: give at least one of status, title, description, dueDate, "
                            "blockedReason")
        self.get_project(uid, project_id)
        changed: list[str] = []

        def change(task: ProjectTaskRecord) -> ProjectTaskRecord:
            changed.clear()  # the transaction may run this again
            new_status = status or task.status
            if new_status == "blocked":
                reason = blocked_reason or task.blocked_reason
                if not reason:
                    raise ToolError("a blocked task needs blockedReason (what it is waiting for)")
            elif blocked_reason is not None:
                raise ToolError(f"blockedReason is only for blocked tasks; task {task_id!r} would be {new_status!r} "
                                "(set status to 'blocked' as well)")
            else:
                reason = None
            fields = {"status": new_status, "title": title if title is not None else task.title,
                      "description": description if description is not None else task.description,
                      "due_date": None if clear_due_date else (due_date or task.due_date), "blocked_reason": reason}
            for name, value in fields.items():
                if getattr(task, name) != value:
                    changed.append(name)
            return task.model_copy(update={**fields, "updated_at": self.clock()})

        updated = self.repo.update_task(uid, project_id, task_id, change)
        if updated is None:
            raise TaskNotFound(project_id, task_id)
        return updated, list(changed)

    # -- context documents -------------------------------------------------------------------

    def publish_document(self, uid: str, project_id: str, *, key: str, title: str, body: str,
                         run_id: str | None = None) -> ContextDocumentRecord:
        self.get_project(uid, project_id)
        document = ContextDocumentRecord(document_id=derived_id("doc", key), project_id=project_id, uid=uid,
                                         title=title, body=body, run_id=run_id, published_at=self.clock())
        self.repo.put_document(document)
        return document

    def list_documents(self, uid: str, project_id: str) -> list[ContextDocumentRecord]:
        return self.repo.list_documents(uid, project_id)

    # -- audit -------------------------------------------------------------------------------

    def audit(self, uid: str, project_id: str, *, timezone: str | None = None) -> ProjectAudit:
        """Overdue (due before the user's today, not done), blocked, and stale (not done, not
        updated for ``STALE_AFTER_DAYS`` days) tasks. A task can be in more than one list."""
        project = self.get_project(uid, project_id)
        tasks = self.repo.list_tasks(uid, project_id)
        at = self.clock()
        today = local_today(at, timezone)
        stale_before = at - STALE_AFTER_DAYS * DAY_S

        def ref(t: ProjectTaskRecord) -> TaskRef:
            overdue_by = (today - t.due_date).days if t.due_date is not None and t.due_date < today else None
            return TaskRef(task_id=t.task_id, title=t.title, status=t.status, due_date=t.due_date,
                           blocked_reason=t.blocked_reason, updated_at=iso(t.updated_at), days_overdue=overdue_by,
                           days_since_update=int((at - t.updated_at) // DAY_S))

        open_tasks = [t for t in tasks if t.status != "done"]
        overdue = sorted((ref(t) for t in open_tasks if t.due_date is not None and t.due_date < today),
                         key=lambda r: -(r.days_overdue or 0))
        blocked = [ref(t) for t in open_tasks if t.status == "blocked"]
        stale = sorted((ref(t) for t in open_tasks if t.updated_at <= stale_before),
                       key=lambda r: -r.days_since_update)
        by_status = {s: sum(1 for t in tasks if t.status == s) for s in ("todo", "in_progress", "blocked", "done")}
        problems = [f"{len(xs)} {what}" for xs, what in ((overdue, "overdue"), (blocked, "blocked"), (stale, "stale"))
                    if xs]
        counted = f"{len(tasks)} task{'' if len(tasks) == 1 else 's'}, {by_status['done']} done"
        summary = f"{counted}; " + (", ".join(problems) if problems else "nothing overdue, blocked or stale")
        return ProjectAudit(project_id=project.project_id, name=project.name, today=today, total_tasks=len(tasks),
                            by_status=by_status, overdue_count=len(overdue), blocked_count=len(blocked),
                            stale_count=len(stale), overdue=overdue, blocked=blocked, stale=stale,
                            healthy=not problems, summary=summary)
