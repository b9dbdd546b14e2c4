"""Fixed structured answers for plan sessions in tests that exercise something else (the console's
views, the API's conformance): always the same three-step plan, a refinement appends "Follow up:
<request>", a reflection completes a task when its act ended it. The offline model's own plans are
tested in tests/agent/test_offline_model.py and tests/e2e/test_offline_tour.py."""

from __future__ import annotations

import json
from typing import Any

from shared.models.base import ModelRequest


def answer(request: ModelRequest) -> dict[str, Any]:
    """Plans, refinements and reflections of the console tests, recognised by their schema."""
    props = request.response_schema.get("properties", {}) if request.response_schema else {}
    data = json.loads(request.turns[0].text) if request.turns else {}
    if "tasks" in props:
        if isinstance(data.get("currentPlan"), list):  # a refinement: keep the plan, add the request
            tasks = [{"id": t.get("id"), "title": t.get("title", ""), "description": t.get("description", "")}
                     for t in data["currentPlan"]]
            tasks.append({"id": None, "title": f"Follow up: {str(data.get('request', ''))[:150]}",
                          "description": "added from the refinement request"})
            return {"tasks": tasks, "summary": "added a task for your request"}
        objective = str(data.get("objective", ""))[:150]
        return {"tasks": [{"title": f"Read what is asked: {objective}", "description": "read the request"},
                          {"title": f"Carry it out: {objective}", "description": "do it"},
                          {"title": "Report the outcome", "description": "say what was done"}],
                "summary": "a three-step plan"}
    if "taskComplete" in props:
        done = (isinstance(data.get("lastAct"), dict) and data["lastAct"].get("action", {}).get("tool") == "task_done"
                and not data.get("rejectedActs"))
        return {"taskComplete": done, "taskFailed": False, "summary": "done" if done else "go on"}
    return {}
