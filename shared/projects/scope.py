"""``entityId`` scoping of the ``project`` and ``task`` context types (seed 003 §4.1).

A request may name the entity the user is working in: a project id (``prj_…``) or a task as
``projectId/taskId``. :func:`entity_scope` resolves it for the signed-in user; ``None`` means it
does not exist *for this user* (another user's project is indistinguishable from a missing one:
the caller answers 404). :meth:`EntityScope.allows` tells whether a tool call stays inside the
entity; a call outside it is the caller's to refuse or to put to the user for confirmation.

Rules (docs/projects.md, "Scoping"):
- a call whose arguments carry ``projectId`` is inside only when it names the scoped project;
- in a task scope, a call whose arguments carry ``taskId`` is inside only when it names the task
  (creating a sibling task or reading the project stays inside: same project);
- ``project_create_from_template`` makes another project, so it is always outside;
- every other call (templates, ``projects_list``, mail, memory, …) names no project: inside.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from shared.state.docstore import DocStore
from shared.state.projects_repo import ProjectsRepo, is_valid_id

PROJECT_CREATING_TOOLS = frozenset({"project_create_from_template"})
"""Tools that make a new project: outside any entity scope by definition."""


@dataclass(frozen=True)
class EntityScope:
    """The project (and, for a task, the task) a request's ``entityId`` names, owned by ``uid``."""

    uid: str
    kind: Literal["project", "task"]
    project_id: str
    project_name: str
    task_id: str | None = None
    task_title: str | None = None

    @property
    def entity_id(self) -> str:
        """The canonical ``entityId``: ``projectId`` or ``projectId/taskId``."""
        return self.project_id if self.task_id is None else f"{self.project_id}/{self.task_id}"

    def describe(self) -> str:
        """One line for the system instruction: what the user is working in."""
        project = f'project "{self.project_name}" (projectId {self.project_id})'
        if self.task_id is None:
            return f"The user is working in {project}."
        return f'The user is working on task "{self.task_title}" (taskId {self.task_id}) of {project}.'

    def outside_reason(self, tool_name: str, args: Mapping[str, Any]) -> str | None:
        """Why the call leaves the entity, in words; ``None`` when it stays inside."""
        if tool_name in PROJECT_CREATING_TOOLS:
            return f"{tool_name} creates another project, outside {self.project_id}"
        project_id = args.get("projectId")
        if project_id is not None and project_id != self.project_id:
            return f"{tool_name} addresses project {project_id!r}, not the scoped project {self.project_id!r}"
        task_id = args.get("taskId")
        if self.task_id is not None and task_id is not None and task_id != self.task_id:
            return f"{tool_name} addresses task {task_id!r}, not the scoped task {self.task_id!r}"
        return None

    def allows(self, tool_name: str, args: Mapping[str, Any]) -> bool:
        """Whether the call stays inside the entity (see the module's rules)."""
        return self.outside_reason(tool_name, args) is None


def parse_entity_id(entity_id: str) -> tuple[str, str | None] | None:
    """``(projectId, taskId | None)`` of a well-formed ``entityId``; ``None`` otherwise."""
    parts = entity_id.strip().split("/")
    if len(parts) > 2 or not all(is_valid_id(p) for p in parts):
        return None
    return parts[0], parts[1] if len(parts) == 2 else None


def entity_scope(source: DocStore | ProjectsRepo, uid: str, entity_id: str) -> EntityScope | None:
    """The scope of ``entity_id`` (a project id, or ``projectId/taskId``) for user ``uid``;
    ``None`` when it is malformed, does not exist, or belongs to another user.

    ``source`` is the runtime's document store (or a :class:`ProjectsRepo` over it)."""
    repo = source if isinstance(source, ProjectsRepo) else ProjectsRepo(source)
    parsed = parse_entity_id(entity_id)
    if parsed is None:
        return None
    project_id, task_id = parsed
    project = repo.get_project(uid, project_id)
    if project is None:
        return None
    if task_id is None:
        return EntityScope(uid=uid, kind="project", project_id=project_id, project_name=project.name)
    task = repo.get_task(uid, project_id, task_id)
    if task is None:
        return None
    return EntityScope(uid=uid, kind="task", project_id=project_id, project_name=project.name, task_id=task_id,
                       task_title=task.title)
