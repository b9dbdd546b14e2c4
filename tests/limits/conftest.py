"""Per-user limit fixtures: the dev app over each real store, with a clock the test moves."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.models.base import Model
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import install

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
