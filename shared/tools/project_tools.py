"""The projects workspace tools (seed 003, project contexts): templates, projects, tasks, context
documents and a project health audit, each scoped to the signed-in user.

Read-only: ``template_search``, ``project_get``, ``projects_list``, ``project_tasks_list``,
``project_audit``. Side effects (under the policy: supervised users approve each):
``template_create``, ``project_create_from_template``, ``project_task_create``,
``project_task_update``, ``context_document_publish``. Every side-effect tool is declared
``idempotent``: the ids of what it creates derive from its action id (a re-run after a crash finds
or rewrites the same documents), and an update sets fields to given values.

Arguments are checked when the call is decided, before any approval is asked for (statuses are an
enum, dates are ``YYYY-MM-DD`` calendar dates, texts have bounds); whether a project, task or
template exists is checked when the tool runs (the model is told "not found"). Previews say in
words what will be created or changed and do no I/O.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from shared.state.project_statuses import ProjectTaskStatus
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from shared.projects.service import ProjectsService
    from shared.state.project_records import ContextDocumentRecord, ProjectRecord, ProjectTaskRecord, TemplateRecord

MAX_NAME_CHARS = 120
MAX_TITLE_CHARS = 200
MAX_DESCRIPTION_CHARS = 2000
MAX_REASON_CHARS = 500
MAX_TEMPLATE_TASKS = 50
MAX_DOCUMENT_CHARS = 20_000
PREVIEW_TEXT_CHARS = 160
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _calendar_date(value: str) -> str:
    if not _DATE.match(value):
        raise ValueError(f"{value[:40]!r} is not a date such as 2026-03-02 (YYYY-MM-DD)")
    try:
        date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a calendar date") from None
    return value


def _calendar_date_or_empty(value: str) -> str:
    return value if value == "" else _calendar_date(value)


Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS)]
Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE_CHARS)]
Description = Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_DESCRIPTION_CHARS)]
Reason = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_REASON_CHARS)]
Body = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_DOCUMENT_CHARS)]
Id = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
DueDate = Annotated[str, StringConstraints(strip_whitespace=True), AfterValidator(_calendar_date)]
DueDateOrClear = Annotated[str, StringConstraints(strip_whitespace=True), AfterValidator(_calendar_date_or_empty)]


class TemplateTaskSpec(BaseModel):
    """One default task of a template."""

    model_config = ConfigDict(extra="forbid")

    title: Title = Field(description="The task's title, an action (\"Draft the budget\").")
    description: Description = Field(default="", description="Optional details.")
    dueInDays: int | None = Field(default=None, ge=0, le=3650,
                                  description="Optional: a project made from the template gets this task due this "
                                              "many days after its creation.")


def _service(ctx: ToolContext) -> ProjectsService:
    # The runtime may hand a service (with its clock); otherwise the workspace lives in the same
    # store as the user's other documents. Imported here: registering the tools (a chat run's cold
    # start) does not load the workspace service.
    if ctx.projects is not None:
        return ctx.projects
    from shared.projects.service import ProjectsService
    from shared.state.projects_repo import ProjectsRepo

    return ProjectsService(ProjectsRepo(ctx.users.store))


def iso(ts: float) -> str:
    """Epoch seconds as an ISO 8601 UTC time (``shared.projects.service.iso``)."""
    from shared.projects.service import iso as service_iso

    return service_iso(ts)


def _timezone(ctx: ToolContext) -> str | None:
    return ctx.users.get_user(ctx.uid).profile.timezone


def _one_line(text: str, limit: int = PREVIEW_TEXT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + " …"


def _template_out(t: TemplateRecord) -> dict[str, Any]:
    return {"templateId": t.template_id, "name": t.name, "description": t.description, "taskCount": len(t.tasks),
            "tasks": [task.to_doc() for task in t.tasks], "createdAt": iso(t.created_at)}


def _project_out(p: ProjectRecord) -> dict[str, Any]:
    return {"projectId": p.project_id, "name": p.name, "description": p.description, "status": p.status,
            "templateId": p.template_id, "createdAt": iso(p.created_at)}


def _task_out(t: ProjectTaskRecord) -> dict[str, Any]:
    return {"taskId": t.task_id, "title": t.title, "description": t.description, "status": t.status,
            "dueDate": None if t.due_date is None else t.due_date.isoformat(), "blockedReason": t.blocked_reason,
            "createdAt": iso(t.created_at), "updatedAt": iso(t.updated_at)}


def _document_out(d: ContextDocumentRecord, *, body: bool = False) -> dict[str, Any]:
    out = {"documentId": d.document_id, "title": d.title, "kind": d.kind, "publishedAt": iso(d.published_at),
           "chars": len(d.body)}
    return {**out, "body": d.body} if body else out


# -- previews (what the user approves: words, no JSON, no I/O) ---------------------------------

def _template_create_preview(args: BaseModel) -> str:
    a: Any = args
    titles = [t.title for t in a.tasks]
    shown = "; ".join(_one_line(t, 60) for t in titles[:8]) + (f"; and {len(titles) - 8} more" if len(titles) > 8
                                                               else "")
    return (f'Create project template "{_one_line(a.name, 80)}" with {len(titles)} default '
            f"task{'s' if len(titles) != 1 else ''}: {shown}")


def _project_create_preview(args: BaseModel) -> str:
    a: Any = args
    about = f"; description: {_one_line(a.description)}" if a.description else ""
    return (f'Create project "{_one_line(a.name, 80)}" from template {a.templateId} (its default tasks become the '
            f"project's to-do list){about}")


def _task_create_preview(args: BaseModel) -> str:
    a: Any = args
    due = f", due {a.dueDate}" if a.dueDate else ", no due date"
    return f'Add task "{_one_line(a.title, 100)}" to project {a.projectId} (status todo{due})'


def _task_update_preview(args: BaseModel) -> str:
    """One clause per changed field; what is not named stays as it is."""
    a: Any = args
    changes: list[str] = []
    if a.status is not None:
        changes.append(f"status → {a.status}")
    if a.blockedReason is not None:
        changes.append(f'blocked because "{_one_line(a.blockedReason, 100)}"')
    if a.title is not None:
        changes.append(f'title → "{_one_line(a.title, 100)}"')
    if a.description is not None:
        changes.append(f'description → "{_one_line(a.description, 100)}"')
    if a.dueDate is not None:
        changes.append("remove the due date" if a.dueDate == "" else f"due date → {a.dueDate}")
    what = "; ".join(changes) if changes else "no change"
    return f"Update task {a.taskId} of project {a.projectId}: {what}"


def _publish_preview(args: BaseModel) -> str:
    a: Any = args
    return (f'Publish context document "{_one_line(a.title, 100)}" ({len(a.body):,} characters of markdown) to '
            f"project {a.projectId}: {_one_line(a.body, 120)}")


def register(registry: ToolRegistry) -> None:
    @registry.tool(side_effect=False)
    def template_search(ctx: ToolContext, query: str) -> dict[str, Any]:
        """Find the user's project templates by words of their name, description or tasks.

        Args:
            query: Words to look for ("product launch"); an empty string lists every template.
        """
        found = _service(ctx).search_templates(ctx.uid, query)
        out: dict[str, Any] = {"templates": [_template_out(t) for t in found], "count": len(found)}
        if not found:
            out["hint"] = "no template matches; template_create makes one"
        return out

    @registry.tool(side_effect=True, idempotent=True, preview=_template_create_preview)
    def template_create(ctx: ToolContext, name: Name, description: Description,
                        tasks: Annotated[list[TemplateTaskSpec], Field(min_length=1, max_length=MAX_TEMPLATE_TASKS)]
                        ) -> dict[str, Any]:
        """Create a reusable project template with its default task list.

        Args:
            name: The template's name ("Product launch").
            description: What kind of project it is for.
            tasks: The default tasks, in order (1 to 50); each project made from the template starts with them.
        """
        from shared.state.project_records import TemplateTask

        template = _service(ctx).create_template(
            ctx.uid, key=ctx.action_id, name=name, description=description, run_id=ctx.run_id,
            tasks=[TemplateTask(title=t.title, description=t.description, due_in_days=t.dueInDays) for t in tasks])
        return {"created": True, "template": _template_out(template)}

    @registry.tool(side_effect=True, idempotent=True, preview=_project_create_preview)
    def project_create_from_template(ctx: ToolContext, templateId: Id, name: Name,
                                     description: Description | None = None) -> dict[str, Any]:
        """Create a project from one of the user's templates; its default tasks become the project's tasks.

        Args:
            templateId: The template (from template_search or template_create).
            name: The project's name.
            description: What the project is about (default: the template's description).
        """
        project, tasks, created = _service(ctx).create_project_from_template(
            ctx.uid, key=ctx.action_id, template_id=templateId, name=name, description=description,
            timezone=_timezone(ctx), run_id=ctx.run_id)
        return {"created": created, "project": _project_out(project), "tasks": [_task_out(t) for t in tasks]}

    @registry.tool(side_effect=False)
    def project_get(ctx: ToolContext, projectId: Id) -> dict[str, Any]:
        """One of the user's projects: its details, how many tasks it has in each status and its context documents.

        Args:
            projectId: The project.
        """
        service = _service(ctx)
        project = service.get_project(ctx.uid, projectId)
        tasks = service.repo.list_tasks(ctx.uid, project.project_id)
        counts = {s: sum(1 for t in tasks if t.status == s) for s in ("todo", "in_progress", "blocked", "done")}
        documents = service.list_documents(ctx.uid, project.project_id)
        return {"project": _project_out(project), "taskCount": len(tasks), "taskCounts": counts,
                "documents": [_document_out(d) for d in documents]}

    @registry.tool(side_effect=False)
    def projects_list(ctx: ToolContext) -> dict[str, Any]:
        """The user's projects, newest first."""
        projects = _service(ctx).list_projects(ctx.uid)
        return {"projects": [_project_out(p) for p in projects], "count": len(projects)}

    @registry.tool(side_effect=False)
    def project_tasks_list(ctx: ToolContext, projectId: Id,
                           status: ProjectTaskStatus | None = None) -> dict[str, Any]:
        """The tasks of one of the user's projects, in list order.

        Args:
            projectId: The project.
            status: Only tasks in this status (todo, in_progress, blocked or done).
        """
        tasks = _service(ctx).list_tasks(ctx.uid, projectId, status)
        return {"projectId": projectId, "tasks": [_task_out(t) for t in tasks], "count": len(tasks)}

    @registry.tool(side_effect=True, idempotent=True, preview=_task_create_preview)
    def project_task_create(ctx: ToolContext, projectId: Id, title: Title,
                            description: Description | None = None, dueDate: DueDate | None = None
                            ) -> dict[str, Any]:
        """Add a task (status todo) at the end of a project's task list.

        Args:
            projectId: The project.
            title: The task's title, an action ("Book the venue").
            description: Optional details.
            dueDate: Optional due date, YYYY-MM-DD.
        """
        task, created = _service(ctx).create_task(
            ctx.uid, projectId, key=ctx.action_id, title=title, description=description or "",
            due_date=date.fromisoformat(dueDate) if dueDate else None)
        return {"created": created, "task": _task_out(task)}

    @registry.tool(side_effect=True, idempotent=True, preview=_task_update_preview)
    def project_task_update(ctx: ToolContext, projectId: Id, taskId: Id,
                            status: ProjectTaskStatus | None = None, title: Title | None = None,
                            description: Description | None = None, dueDate: DueDateOrClear | None = None,
                            blockedReason: Reason | None = None) -> dict[str, Any]:
        """Change a task of a project: its status, title, description, due date or the reason it is blocked.

        Args:
            projectId: The project.
            taskId: The task (from project_tasks_list).
            status: New status: todo, in_progress, blocked (needs blockedReason) or done.
            title: New title.
            description: New description.
            dueDate: New due date, YYYY-MM-DD; an empty string removes the due date.
            blockedReason: What the task is waiting for (only for a task that is or becomes blocked).
        """
        task, changed = _service(ctx).update_task(
            ctx.uid, projectId, taskId, status=status, title=title, description=description,
            due_date=date.fromisoformat(dueDate) if dueDate else None, clear_due_date=dueDate == "",
            blocked_reason=blockedReason)
        return {"updated": True, "changed": changed, "task": _task_out(task)}

    @registry.tool(side_effect=True, idempotent=True, preview=_publish_preview)
    def context_document_publish(ctx: ToolContext, projectId: Id, title: Title, body: Body
                                 ) -> dict[str, Any]:
        """Publish a context document (markdown) to a project: goals, scope, decisions, anything a collaborator needs.

        Args:
            projectId: The project.
            title: The document's title.
            body: The document, in markdown (at most 20,000 characters).
        """
        document = _service(ctx).publish_document(ctx.uid, projectId, key=ctx.action_id, title=title, body=body,
                                                  run_id=ctx.run_id)
        return {"published": True, "projectId": projectId, "document": _document_out(document)}

    @registry.tool(side_effect=False)
    def project_audit(ctx: ToolContext, projectId: Id) -> dict[str, Any]:
        """Audit a project's health: its overdue, blocked and stale tasks (stale: not done and not updated for 14 days).

        Args:
            projectId: The project.
        """
        return _service(ctx).audit(ctx.uid, projectId, timezone=_timezone(ctx)).out()
