"""The offline model's structured answers: plans, refinements, reflections and plan reviews.

A plan is the objective's own steps: it is split into clauses at "then", ";", sentence ends and
"and" before a verb ("Check the time in Tokyo, then open an issue on octo/hello titled …" → two
tasks), quoted text kept whole. Each clause becomes one task, titled with its words (capitalised,
at most 80 characters) and described with the whole clause, so the act that carries it out finds
its arguments in its task. A refinement adds a task ("also …", "add a task to …"), removes one
("remove t2", "drop the step about …") or, for anything else, adds the request as a task. A
reflection completes a task when its act answered without an error or when the executor said the
task is done (not when the user rejected what it needed, nor when the executor could not do it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from shared.models.base import ModelRequest

LABEL = "[offline model: set GEMINI_API_KEY to use Gemini]"
"""How the offline model says it is offline (once per run)."""
MAX_TITLE = 80
MAX_DESCRIPTION = 2000
"""What a task's description may hold (``shared/plans/planner.py``, ``TaskDraft``)."""
MAX_TASKS = 30
"""``PLAN_MAX_TASKS``'s default: a refinement adds no more than that (planning gets the setting)."""
VERBS = frozenset({
    "add", "ask", "audit", "book", "check", "close", "comment", "convert", "create", "draft", "email",
    "fetch", "file", "find", "get", "list", "look", "make", "note", "open", "post", "publish", "read",
    "recall", "remember", "reply", "report", "save", "schedule", "search", "send", "show", "summarise",
    "summarize", "tell", "update", "write", "archive", "tidy", "review", "plan", "collect", "gather",
    "compare", "count", "prepare", "share", "notify", "call", "use", "delete", "remove", "rename",
    "move", "copy", "run", "test", "fix", "build", "deploy", "confirm", "verify", "record", "log", "store",
    "keep",
})
_SPLIT = re.compile(r"\s*(?:;|\.\s+|,?\s+and then\s+|,?\s+then\s+|,\s*(?=(?:{v})\b)|,?\s+and\s+(?=(?:{v})\b))\s*"
                    .replace("{v}", "|".join(sorted(VERBS))), re.IGNORECASE)
_QUOTE = re.compile(r"[\"“][^\"”]*[\"”]")
_LEAD = re.compile(r"^(?:please|also|first|then|finally|and|next|afterwards)\b[\s,]*", re.IGNORECASE)
DONE_PREFIX = "Done: "
FAILED_PREFIX = "Could not "


def clauses(objective: str) -> list[str]:
    """The objective's steps, in order (quoted text is never split)."""
    text = " ".join(objective.split())
    quoted = [m.span() for m in _QUOTE.finditer(text)]
    cuts = [m for m in _SPLIT.finditer(text) if not any(a < m.start() < b for a, b in quoted)]
    parts: list[str] = []
    start = 0
    for m in cuts:
        parts.append(text[start:m.start()])
        start = m.end()
    parts.append(text[start:])
    out: list[str] = []
    for part in parts:
        step = part.strip(" ,.")
        while _LEAD.match(step):
            step = _LEAD.sub("", step, count=1).strip(" ,.")
        if step:
            out.append(step)
    return out or ["Do what was asked"]


def title_of(clause: str) -> str:
    text = clause.strip().rstrip(".!?")
    text = text[:1].upper() + text[1:]
    if len(text) <= MAX_TITLE:
        return text
    cut = text[:MAX_TITLE - 1].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def task(clause: str) -> dict[str, Any]:
    text = clause.strip().rstrip(".") or "Do what was asked"
    description = f"{text[:1].upper()}{text[1:]}."
    if len(description) > MAX_DESCRIPTION:
        description = description[:MAX_DESCRIPTION - 1] + "…"
    return {"id": None, "title": title_of(text), "description": description}


def plan(data: dict[str, Any], max_tasks: int = 30) -> dict[str, Any]:
    objective = str(data.get("objective", "")).strip()
    context = str(data.get("repositoryContext", ""))
    if "project_create" in context:  # the order a project_create plan must have (docs/planner-loop.md)
        subject = title_of(objective)
        steps = [f"Search the templates for {subject}", "Create the project from the best template",
                 f"Publish the project's context document for {subject}"]
    else:
        steps = clauses(objective)
    tasks = [task(c) for c in steps[:max_tasks]]
    return {"tasks": tasks, "summary": f"{len(tasks)} step{'s' if len(tasks) != 1 else ''} taken from the "
                                       f"objective, in its order (offline model)"}


_ADD = re.compile(r"^(?:please\s+)?(?:also|and|add(?:\s+an?)?(?:\s+(?:task|step))?(?:\s+to)?|then)\b\s*[:,]?\s*(.+)",
                  re.IGNORECASE | re.DOTALL)
_REMOVE = re.compile(r"^(?:please\s+)?(?:remove|drop|delete|skip)\s+(?:the\s+)?(?:task|step)?\s*(.+)",
                     re.IGNORECASE | re.DOTALL)


def refine(data: dict[str, Any]) -> dict[str, Any]:
    current = [{"id": t.get("id"), "title": t.get("title", ""), "description": t.get("description", "")}
               for t in data.get("currentPlan", []) if isinstance(t, dict)]
    request = " ".join(str(data.get("request", "")).split())
    removed = _REMOVE.match(request)
    if removed and current:
        target = removed.group(1).strip(" .").lower()
        about = re.sub(r"^(?:about|on|for)\s+", "", target)
        for t in current:
            words = f"{t['title']} {t['description']}".lower()
            if (t["id"] and t["id"].lower() == target) or (about and about in words):
                kept = [x for x in current if x is not t]
                if kept:
                    return {"tasks": kept, "summary": f"Removed the task \"{t['title']}\" as asked."}
    added = _ADD.match(request)
    text = added.group(1) if added else request
    new = [task(c) for c in clauses(text)][:max(1, MAX_TASKS - len(current))] if text.strip() else []
    titles = ", ".join(f"\"{n['title']}\"" for n in new)
    summary = f"Added {titles} at the end, as asked." if new else "No change."
    return {"tasks": current + new, "summary": summary if len(summary) <= 1000 else summary[:999] + "…"}


def reflection(data: dict[str, Any]) -> dict[str, Any]:
    last = data.get("lastAct") if isinstance(data.get("lastAct"), dict) else {}
    assert isinstance(last, dict)
    action = last.get("action") if isinstance(last.get("action"), dict) else {}
    observation = last.get("observation") if isinstance(last.get("observation"), dict) else {}
    assert isinstance(action, dict) and isinstance(observation, dict)
    tool = str(action.get("tool", ""))
    rejected = bool(data.get("rejectedActs")) or observation.get("rejected") is True
    if tool == "task_done":
        text = str(observation.get("text", "")).replace(LABEL, "").strip()
        failed = text.startswith(FAILED_PREFIX)
        done = not failed and not rejected
        return {"taskComplete": done, "taskFailed": failed and not rejected,
                "summary": text[:300] if text else ("done" if done else "not done")}
    if rejected:
        return {"taskComplete": False, "taskFailed": False, "summary": f"the user rejected {tool}"}
    if observation.get("error"):
        return {"taskComplete": False, "taskFailed": False,
                "summary": f"{tool} answered an error: {str(observation['error'])[:200]}"}
    preview = str(action.get("preview") or tool)
    return {"taskComplete": True, "taskFailed": False, "summary": f"{DONE_PREFIX}{preview}"[:300]}


def structured(request: ModelRequest) -> dict[str, Any]:
    """The JSON answer to a structured request, recognised by its schema (anything else: ``{}``,
    which will not validate: the honest answer of a model that cannot do it)."""
    props = request.response_schema.get("properties", {}) if request.response_schema else {}
    prompt = request.turns[0].text if request.turns else "{}"
    try:
        data = json.loads(prompt)
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    if "tasks" in props:
        try:
            return refine(data) if isinstance(data.get("currentPlan"), list) else plan(data)
        except Exception:  # whatever the text holds, a plan: the objective as one task
            return {"tasks": [task(str(data.get("objective", "")) or "Do what was asked")], "summary": "one step"}
    if "taskComplete" in props:
        return reflection(data)
    if "verdict" in props:
        return {"verdict": "approved", "notes": "offline model: the plan was not critiqued, only accepted"}
    return {}
