"""HTTP end-to-end fixtures: the dev app (every function on one Flask app) over a real store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.models.base import Model
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import install as install_runtime

ALICE = {"Authorization": "Bearer dev:alice"}
BOB = {"Authorization": "Bearer dev:bob"}

Install = Callable[..., Runtime]


@pytest.fixture
def install(sqlite_docstore: DocStore) -> Iterator[Install]:
    store = sqlite_docstore
    """Install a runtime for the HTTP functions: ``install(model, **settings)``."""

    def make(model: Model, *, store_override: DocStore | None = None, **overrides: Any) -> Runtime:
        return install_runtime(store_override or store, model, **overrides)

    yield make
    set_runtime(None)


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()
