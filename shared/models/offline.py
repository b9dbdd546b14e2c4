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
        if request.response_schema is not None:
            return Turn(role="model", parts=[Part(text=json.dumps(_structured(request)))])
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


def _structured(request: ModelRequest) -> dict[str, object]:
    """JSON answers for the plan sessions' structured requests, recognised by their schema: a plan
    (``tasks``) of three labelled steps, or a reflection (``taskComplete``) that completes a task
    once the executor said it is done. Anything else gets an empty object (it will not validate,
    which is the honest answer of a model that cannot do it)."""
    props = request.response_schema.get("properties", {}) if request.response_schema else {}
    prompt = request.turns[0].text if request.turns else "{}"
    try:
        data = json.loads(prompt)
    except ValueError:
        data = {}
    if "tasks" in props:
        if isinstance(data.get("currentPlan"), list):  # a refinement: keep the plan, note the request
            tasks = [{"id": t.get("id"), "title": t.get("title", ""), "description": t.get("description", "")}
                     for t in data["currentPlan"]]
            tasks.append({"id": None, "title": f"Follow up: {str(data.get('request', ''))[:150]}",
                          "description": f"{LABEL} added from the refinement request"})
            return {"tasks": tasks, "summary": f"{LABEL} added a task for your request"}
        objective = str(data.get("objective", ""))[:150]
        return {"tasks": [{"title": f"Understand: {objective}", "description": f"{LABEL} read what is asked"},
                          {"title": f"Do: {objective}", "description": f"{LABEL} carry it out"},
                          {"title": "Report the outcome", "description": f"{LABEL} say what was done"}],
                "summary": f"{LABEL} a three-step plan"}
    if "taskComplete" in props:
        # A task whose acts the user rejected is not met by the model's word alone (shared/plans/host.py).
        done = (isinstance(data.get("lastAct"), dict) and data["lastAct"].get("action", {}).get("tool") == "task_done"
                and not data.get("rejectedActs"))
        return {"taskComplete": done, "taskFailed": False, "summary": f"{LABEL} " + ("done" if done else "go on")}
    return {}
