"""A user's projects workspace (seed 003 §4.1, project contexts): templates, projects, their tasks
and their context documents.

Layout (docs/firestore-layout.md, docs/projects.md): ``users/{uid}/templates/{templateId}``,
``users/{uid}/projects/{projectId}``, ``users/{uid}/projects/{projectId}/tasks/{taskId}`` and
``users/{uid}/projects/{projectId}/documents/{documentId}``. Everything lives under the owner's
user document, so another user's ids simply do not resolve. Tasks and documents are documents of
their own (a project document never grows with its tasks).
"""

from __future__ import annotations

from datetime import date

from pydantic import Field

from shared.state.project_statuses import DocumentKind as DocumentKind
from shared.state.project_statuses import ProjectStatus as ProjectStatus
from shared.state.project_statuses import ProjectTaskStatus as ProjectTaskStatus
from shared.state.records import SCHEMA_VERSION, Record, now


class TemplateTask(Record):
    """One entry of a template's default task list."""

    title: str
    description: str = ""
    due_in_days: int | None = None
    """When set, a project created from the template gets the task due this many days after its creation."""


class TemplateRecord(Record):
    template_id: str
    uid: str
    name: str
    description: str = ""
    tasks: list[TemplateTask] = Field(default_factory=list)
    run_id: str | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION


class ProjectRecord(Record):
    project_id: str
    uid: str
    name: str
    description: str = ""
    status: ProjectStatus = "active"
    template_id: str | None = None
    run_id: str | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION


class ProjectTaskRecord(Record):
    task_id: str
    project_id: str
    uid: str
    title: str
    description: str = ""
    status: ProjectTaskStatus = "todo"
    due_date: date | None = None
    """A calendar date (``YYYY-MM-DD``): overdue once the user's today is past it."""
    blocked_reason: str | None = None
    """Why the task is blocked; kept only while ``status`` is ``blocked``."""
    order: int = 0
    """Position in the project's list (template tasks first, then tasks in creation order)."""
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION


class ContextDocumentRecord(Record):
    document_id: str
    project_id: str
    uid: str
    title: str
    body: str
    """Markdown."""
    kind: DocumentKind = "context"
    run_id: str | None = None
    published_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION
