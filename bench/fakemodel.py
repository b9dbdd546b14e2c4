"""A fake Gemini server (tests/fakes) scripted for the benchmarks: the real google-genai SDK and
our Gemini adapter talk to it, so instances measured here load and run what production does."""

from __future__ import annotations

from tests.fakes.fake_gemini import FakeGemini, Received, Reply, Script, call


def tool_then_answer(delay_s: float) -> FakeGemini:
    """Every model turn waits ``delay_s``; the first calls ``search_memory``, the next answers."""
    fake = FakeGemini()

    def handle(received: Received) -> Script:
        contents = received.body.get("contents") or []
        parts = contents[-1].get("parts", []) if contents else []
        if any("functionResponse" in p for p in parts):
            return Reply.text("You like coffee, as far as I can tell.", delay_s=delay_s)
        return Reply([call("search_memory", {"query": "coffee"})], delay_s=delay_s)

    fake.handler = handle
    return fake
