"""Fixtures for the goals tests: the ``goals`` function served in-process by functions-framework,
with the real google-genai SDK pointed at a local fake Gemini server, and a fixed "today"."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from functions_framework import create_app

from shared.config import Settings
from shared.goals import workflow
from shared.models.factory import clear_model_cache
from shared.runtime import Runtime, set_runtime
from shared.state.sqlite_docstore import SqliteDocStore
from tests.fakes.fake_gemini import FakeGemini


@pytest.fixture
def fake_gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGemini]:
    """A started FakeGemini that ``Settings.from_env()`` points at (no retries: failures are immediate)."""
    with FakeGemini() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("MODEL_MAX_RETRIES", "0")
        yield fake
        clear_model_cache()


@pytest.fixture
def ledger_store(tmp_path: Path) -> Iterator[SqliteDocStore]:
    """The store the goals function's usage ledger writes to (a runtime installed for the test)."""
    store = SqliteDocStore(str(tmp_path / "ledger.sqlite3"))
    set_runtime(Runtime(Settings(), store=store))
    yield store
    set_runtime(None)
    store.close()


@pytest.fixture
def goals_client(ledger_store: SqliteDocStore) -> FlaskClient:
    """The goals entry point exactly as functions-framework deploys it (``--target goals``)."""
    return create_app("goals", "main.py", "http").test_client()


TODAY = date(2025, 11, 1)  # the spec's examples are in November 2025


@pytest.fixture(autouse=True)
def fixed_today(monkeypatch: pytest.MonkeyPatch) -> date:
    """The workflow's clock (``utc_today``) reads ``TODAY``, so the spec's 2025 dates are in the future."""
    monkeypatch.setattr(workflow, "utc_today", lambda: TODAY)
    return TODAY
