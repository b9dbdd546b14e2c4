"""Fixtures of the projects workspace tests: the repository and service on both real stores
(SQLite and the Firestore emulator), a clock the tests move, and runtimes with scripted models."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import Model
from shared.projects.service import ProjectsService
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from shared.state.projects_repo import ProjectsRepo
from shared.state.records import UserRecord

T0 = datetime(2026, 3, 15, 12, 0, tzinfo=UTC).timestamp()
"""Sunday 15 March 2026, 12:00 UTC: "now" of the tests with a fixed clock."""
DAY = 86_400.0

MakeRuntime = Callable[..., Runtime]


class Clock:
    """A clock the test sets and moves."""

    def __init__(self, at: float = T0) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at

    def days_ago(self, days: float) -> None:
        self.at = T0 - days * DAY


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def repo(docstore: DocStore) -> ProjectsRepo:
    return ProjectsRepo(docstore)


@pytest.fixture
def service(repo: ProjectsRepo, clock: Clock) -> ProjectsService:
    return ProjectsService(repo, clock=clock)


@pytest.fixture
def make_runtime(docstore: DocStore) -> MakeRuntime:
    def make(model: Model, *, trust: str | None = "autonomous", uid: str = "alice", timezone: str | None = None,
             **overrides: Any) -> Runtime:
        settings = dataclasses.replace(Settings(state_backend="sqlite", auth_mode="local", dispatcher="none",
                                                run_deadline_s=30.0), **overrides)
        rt = Runtime(settings, store=docstore, model=model, dispatcher=RecordingDispatcher())
        if trust is not None:
            user = UserRecord(uid=uid, trust_level=trust)  # type: ignore[arg-type]
            user.profile.timezone = timezone
            rt.users.put_user(user)
        return rt

    return make
