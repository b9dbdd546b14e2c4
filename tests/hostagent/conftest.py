"""Fixtures of the host agent tests: the fake Gemini server for the LLM planner."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_gemini import FakeGemini


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake
