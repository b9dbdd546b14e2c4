"""The offline model used by ``make dev`` when no GEMINI_API_KEY is set.

It is not a language model: a few deterministic rules that exercise the real flow (tool calls,
approvals, streaming) and say plainly in every reply that they are offline.
"""

from __future__ import annotations

import json
import re

from shared.models.base import DeltaSink, GroundedAnswer, ModelRequest, ModelResponse, Part, Turn, Usage
from shared.models.scripted import call

LABEL = "[offline model: set GEMINI_API_KEY to use Gemini]"
_REMEMBER = re.compile(r"\b(?:remember|note|save)\b(?:\s+that)?\s*[:,]?\s*(.+)", re.IGNORECASE | re.DOTALL)
_RECALL = re.compile(r"\b(?:what do you (?:know|remember)|recall|search (?:my )?memor\w*)\b(.*)",
                     re.IGNORECASE | re.DOTALL)


class OfflineModel:
    @property
    def name(self) -> str:
        return "offline"

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        turn = self._answer(request)
        if on_delta is not None:
            for p in turn.parts:
                if p.text:
                    for i in range(0, len(p.text), 40):
                        on_delta("text", p.text[i:i + 40])
        return ModelResponse(turn=turn, usage=Usage(requests=1), finish_reason="STOP", model_version="offline")

    def grounded_search(self, query: str, *, timeout_s: float | None = None) -> GroundedAnswer:
        """No search is made offline: a clearly labelled answer saying so (``available`` false)."""
        return GroundedAnswer(text=f"{LABEL} Web search is unavailable offline; nothing was searched for "
                                   f"{query[:200]!r}.", usage=Usage(requests=1), model_version="offline",
                              available=False)

    def _answer(self, request: ModelRequest) -> Turn:
        tools = {t.name for t in request.tools}
        last = request.turns[-1] if request.turns else Turn(role="user", parts=[Part(text="")])
        responses = [p.function_response for p in last.parts if p.function_response is not None]
        if responses:
            lines = [f"{r.name}: {json.dumps(r.response, ensure_ascii=False)[:300]}" for r in responses]
            return Turn(role="model", parts=[Part(text=f"{LABEL} Tool results:\n" + "\n".join(lines))])
        text = last.text.strip()
        r = _RECALL.search(text)
        if r and "search_memory" in tools:
            query = r.group(1).strip(" ?.") or text
            return Turn(role="model", parts=[call("search_memory", {"query": query})])
        m = _REMEMBER.search(text)
        if m and "save_memory" in tools:
            return Turn(role="model", parts=[call("save_memory", {"text": m.group(1).strip().rstrip(".")})])
        return Turn(role="model", parts=[Part(text=f"{LABEL} You said: {text[:500]}")])
