"""Fixtures of the host agent tests: the fake Gemini server, and the real Gemini model layer
(google-genai) pointed at it, for the LLM planner."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.models.gemini import GeminiModel
from tests.fakes.fake_gemini import FakeGemini


@pytest.fixture
def gemini(fake_gemini: FakeGemini) -> Iterator[GeminiModel]:
    model = GeminiModel(fake_gemini.settings(), backoff_initial_s=0.01, backoff_max_s=0.05)
    yield model
    model.close()
