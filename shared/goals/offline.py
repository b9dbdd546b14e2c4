"""The offline planner: what ``make dev`` plans with when no Gemini is configured.

It is not a language model. It answers the planner's two structured requests with a few
deterministic rules, so the whole goals flow (new plan, refinement, approval) can be tried
locally, and it labels every summary as offline.
"""

from __future__ import annotations

import json
import re
from typing import Any

from shared.models.base import DeltaSink, ModelRequest, ModelResponse, Part, Turn, Usage

LABEL = "[offline planner: set GEMINI_API_KEY to use Gemini]"
_WANT = re.compile(r"^(?:now\s+|so\s+|ok(?:ay)?,?\s+)*(?:i\s+(?:want|would like|'d like|wanna|need|plan)\s+to\s+"
                   r"|i\s+want\s+|help me\s+|let'?s\s+)?(?:start\s+)?", re.IGNORECASE)
_ADD = re.compile(r"\badd (?:a |an |one more |another )?milestone (?:for|on|about|called)?\s*(.+?)[.?!]*$",
                  re.IGNORECASE)
_REMOVE = re.compile(r"\b(?:remove|drop|delete) (?:the )?(.+?)(?: milestone)?[.?!]*$", re.IGNORECASE)


class OfflinePlanner:
    """A ``Model`` that answers ``NewPlanDraft`` and ``PlanEdit`` requests deterministically."""

    @property
    def name(self) -> str:
        return "offline-planner"

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        prompt = json.loads(request.turns[0].text)
        schema = request.response_schema or {}
        if "milestoneChanges" in schema.get("properties", {}):
            answer = _edit(prompt)
        else:
            answer = _new_plan(str(prompt.get("request", "")))
        text = json.dumps(answer, ensure_ascii=False)
        if on_delta is not None:
            on_delta("text", text)
        return ModelResponse(turn=Turn(role="model", parts=[Part(text=text)]), usage=Usage(requests=1),
                             finish_reason="STOP", model_version="offline")


def _new_plan(message: str) -> dict[str, Any]:
    subject = _WANT.sub("", message.strip()).rstrip(".!? ") or "My new goal"
    title = subject[:1].upper() + subject[1:80]
    phases = [("Foundations", ["List what you already know", f"Pick one resource for: {subject[:60]}"]),
              ("Practice", ["Practise three times a week", "Finish one small exercise"]),
              ("Showcase", ["Build something small you can show", "Review what worked"])]
    return {
        "summary": f"{LABEL} A simple three-step starting plan.",
        "goal": {"title": title, "description": f"Make steady progress on: {subject[:200]}"},
        "milestones": [{"title": name, "tasks": [{"title": t} for t in tasks]} for name, tasks in phases],
    }


def _edit(prompt: dict[str, Any]) -> dict[str, Any]:
    message = str(prompt.get("request", "")).strip()
    milestones = prompt.get("currentPlan", {}).get("milestones", [])
    added = _ADD.search(message)
    if added:
        title = added.group(1).strip()[:100] or "New milestone"
        title = title[:1].upper() + title[1:]
        return {"summary": f"{LABEL} Added the milestone \u201c{title}\u201d.", "goal": None,
                "milestoneChanges": [{"action": "add", "ref": None, "after": None,
                                      "milestone": {"title": title, "tasks": [{"title": f"Plan: {title}"}]}}]}
    removed = _REMOVE.search(message)
    if removed:
        wanted = removed.group(1).strip().casefold()
        for m in milestones:
            if str(m.get("title", "")).casefold() == wanted:
                return {"summary": f"{LABEL} Removed the milestone \u201c{m['title']}\u201d.", "goal": None,
                        "milestoneChanges": [{"action": "remove", "ref": m["ref"]}]}
    return {"summary": f"{LABEL} I can only add or remove milestones offline, so nothing changed.",
            "goal": None, "milestoneChanges": []}
