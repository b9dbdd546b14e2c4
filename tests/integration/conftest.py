"""Fixtures for integration tests: the fake Gemini server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_gemini import FakeGemini


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A started ``FakeGemini`` (one per test: starting one takes milliseconds)."""
    with FakeGemini() as fake:
        yield fake
