"""Fixtures for loop, policy and approval tests: a real SQLite store and scripted models."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shared.config import Settings
from shared.dispatch import RecordingDispatcher
from shared.models.base import Model
from shared.runtime import Runtime
from shared.state.records import UserRecord
from shared.state.sqlite_docstore import SqliteDocStore

MakeRuntime = Callable[..., Runtime]


@pytest.fixture
def store(tmp_path: Any) -> Iterator[SqliteDocStore]:
    s = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    yield s
    s.close()


def test_settings(**overrides: Any) -> Settings:
    base = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=30.0)
    return dataclasses.replace(base, **overrides)


@pytest.fixture
def make_runtime(store: SqliteDocStore) -> MakeRuntime:
    def make(model: Model, *, trust: str | None = None, uid: str = "alice", **overrides: Any) -> Runtime:
        rt = Runtime(test_settings(**overrides), store=store, model=model, dispatcher=RecordingDispatcher())
        if trust is not None:
            rt.users.put_user(UserRecord(uid=uid, trust_level=trust))  # type: ignore[arg-type]
        return rt

    return make
