"""The closed vocabularies of the projects workspace (``project_records.py``), in a module of their
own: the project tools' argument models need ``ProjectTaskStatus`` when the tool registry is built
(a chat run's cold start), the records only when a project tool runs (issue 20)."""

from __future__ import annotations

from typing import Literal

ProjectStatus = Literal["active", "on_hold", "completed", "archived"]
ProjectTaskStatus = Literal["todo", "in_progress", "blocked", "done"]
DocumentKind = Literal["context"]
