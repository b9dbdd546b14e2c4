"""A scripted planner/executor for plan sessions (tests and benchmarks): answers each request by
what it is for (plan, refinement, reflection, act), with zero latency."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn


@dataclass
class Script:
    """``tasks``: the first plan's task titles; ``acts``: per task title, the tool calls of its acts
    (each ``(tool, args)``), after which the executor answers in text; ``reflect``: an optional
    function of the reflect prompt returning the reflection JSON."""

    tasks: list[str] = field(default_factory=lambda: ["Read the notes", "Write the summary", "Publish it"])
    acts: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    refine: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    reflect: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    plan_answers: list[str] | None = None
    """Raw answers to the plan request (e.g. invalid JSON), used before the valid plan."""
    requests: list[ModelRequest] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def answer(self, request: ModelRequest) -> Turn:
        with self.lock:
            self.requests.append(request)
        instruction = request.system_instruction
        if "planning module" in instruction and "reviews the current plan" not in instruction:
            self.count("plan")
            if self.plan_answers:
                return text_turn(self.plan_answers.pop(0))
            return text_turn(json.dumps({"tasks": [{"title": t, "description": f"do: {t}"} for t in self.tasks],
                                         "summary": f"{len(self.tasks)} steps"}))
        if "reviews the current plan" in instruction:
            self.count("refine")
            prompt = json.loads(request.turns[0].parts[0].text or "{}")
            assert self.refine is not None
            return text_turn(json.dumps(self.refine(prompt)))
        if "reflection module" in instruction:
            self.count("reflect")
            prompt = json.loads(request.turns[0].parts[0].text or "{}")
            if self.reflect is not None:
                return text_turn(json.dumps(self.reflect(prompt)))
            # As a careful model would: a task whose acts the user rejected is not met by saying so.
            done = prompt["lastAct"]["action"]["tool"] == "task_done" and not prompt.get("rejectedActs")
            return text_turn(json.dumps({"taskComplete": done, "taskFailed": False,
                                         "summary": "done" if done else "progress"}))
        # the executor: the act for the current task
        self.count("act")
        task_title = _current_task(request.turns)
        planned = self.acts.get(task_title, [])
        done = _acts_since_task(request.turns)
        if done < len(planned):
            tool, args = planned[done]
            return calls_turn(call(tool, args)).model_copy(
                update={"parts": [*text_turn(f"I will use {tool} for {task_title}.").parts,
                                  *calls_turn(call(tool, args)).parts]})
        return text_turn(f"Finished: {task_title}.")


def _current_task(turns: list[Turn]) -> str:
    for t in reversed(turns):
        if t.role == "user":
            for p in t.parts:
                if p.text and p.text.startswith("Task "):
                    return p.text.split(": ", 1)[1].split("\n", 1)[0]
    return ""


def _acts_since_task(turns: list[Turn]) -> int:
    n = 0
    for t in reversed(turns):
        if t.role == "user" and any(p.text and p.text.startswith("Task ") for p in t.parts):
            return n
        n += len(t.function_calls)
    return n


def model(script: Script) -> FunctionModel:
    return FunctionModel(script.answer, name="gemini-3-flash-preview")
