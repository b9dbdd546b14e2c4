"""Fixtures for loop, policy and approval tests: a real SQLite store and scripted models."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import Model
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from shared.state.records import UserRecord

MakeRuntime = Callable[..., Runtime]


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def store(request: pytest.FixtureRequest) -> DocStore:
    """Every loop/approval test runs on both real stores (Firestore through its emulator)."""
    return request.getfixturevalue(f"{request.param}_docstore")  # type: ignore[no-any-return]


def make_settings(**overrides: Any) -> Settings:
    base = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=30.0)
    return dataclasses.replace(base, **overrides)


@pytest.fixture
def make_runtime(store: DocStore) -> MakeRuntime:
    def make(model: Model, *, trust: str | None = None, uid: str = "alice", **overrides: Any) -> Runtime:
        rt = Runtime(make_settings(**overrides), store=store, model=model, dispatcher=RecordingDispatcher())
        if trust is not None:
            rt.users.put_user(UserRecord(uid=uid, trust_level=trust))  # type: ignore[arg-type]
        return rt

    return make
