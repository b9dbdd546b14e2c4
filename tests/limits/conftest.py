"""Per-user limit fixtures: the dev app over each real store, with a clock the test moves."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import StoreError
from shared.models.base import Model
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import Doc, DocStore
from tests.agent.conftest import install, make_settings

ALICE = {"Authorization": "Bearer dev:alice"}
BOB = {"Authorization": "Bearer dev:bob"}
OFF = {"limit_requests_per_minute": 0, "limit_active_runs": 0, "limit_active_sessions": 0, "limit_daily_tokens": 0}
"""Every limit off: a test turns on the one it is about."""


class Clock:
    """Epoch seconds that only move when the test says so (no wall-clock dependence)."""

    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


MakeRuntime = Callable[..., Runtime]


@pytest.fixture
def make_rt(store: DocStore) -> Iterator[MakeRuntime]:
    """``make_rt(model, clock=None, **settings)``: the process runtime of the HTTP functions, every
    limit off unless a setting turns it on."""

    def make(model: Model, *, clock: Clock | None = None, **overrides: Any) -> Runtime:
        rt = install(store, model, **{**OFF, **overrides})
        if clock is not None:
            rt.limits.clock = clock
        return rt

    yield make
    set_runtime(None)


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


DAY = "2031-03-04"


class AfterBatch:
    """The store, with ``hook`` run once right after the first ``get_many`` that reads the user's
    document (the start's batch) returned, or ``fail`` raised instead of it."""

    def __init__(self, inner: DocStore, uid: str = "alice") -> None:
        self.inner = inner
        self.user_path = f"users/{uid}"
        self.hook: Callable[[], None] | None = None
        self.fail = False
        self.batches: list[list[str]] = []

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        if self.user_path not in paths:
            return self.inner.get_many(paths)
        self.batches.append(list(paths))
        if self.fail:
            self.fail = False
            raise StoreError("the batched read failed")
        out = self.inner.get_many(paths)
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def make_wrapped(store: DocStore) -> Iterator[Callable[..., tuple[Runtime, AfterBatch]]]:
    """``make_wrapped(**limits)``: the process runtime on ``AfterBatch(store)``, every other limit off."""

    def make(**limits: Any) -> tuple[Runtime, AfterBatch]:
        wrapped = AfterBatch(store)
        rt = Runtime(make_settings(**{**OFF, **limits}), store=wrapped,  # type: ignore[arg-type]
                     model=FunctionModel(lambda r: text_turn("hi")), authenticator=LocalAuthenticator(),
                     dispatcher=RecordingDispatcher())
        rt.limits.clock = Clock(datetime.fromisoformat(f"{DAY}T12:00:00+00:00").timestamp())
        set_runtime(rt)
        return rt, wrapped

    yield make
    set_runtime(None)


MakeWrapped = Callable[..., tuple[Runtime, AfterBatch]]
