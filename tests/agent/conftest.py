"""Fixtures for loop, policy and approval tests: a real SQLite store and scripted models."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from shared.auth import LocalAuthenticator
from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import Model
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.state.records import UserRecord

MakeRuntime = Callable[..., Runtime]


def make_settings(**overrides: Any) -> Settings:
    base = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=30.0)
    return dataclasses.replace(base, **overrides)


def install(store: DocStore, model: Model, **overrides: Any) -> Runtime:
    """The process runtime the HTTP functions use (``set_runtime``; unset it after the test) over
    ``store``: local auth, a recording dispatcher, :func:`make_settings` with ``overrides``."""
    rt = Runtime(make_settings(**overrides), store=store, model=model, authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    set_runtime(rt)
    return rt


@pytest.fixture
def make_runtime(store: DocStore) -> MakeRuntime:
    def make(model: Model, *, trust: str | None = None, uid: str = "alice", **overrides: Any) -> Runtime:
        rt = Runtime(make_settings(**overrides), store=store, model=model, dispatcher=RecordingDispatcher())
        if trust is not None:
            rt.users.put_user(UserRecord(uid=uid, trust_level=trust))  # type: ignore[arg-type]
        return rt

    return make
