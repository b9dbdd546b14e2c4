"""The offline model used by ``make dev`` (and ``make demo``) when no GEMINI_API_KEY is set.

It is not a language model: deterministic rules that exercise every tool and flow of the runtime
(tool calls, approvals, MCP servers, connectors, plan sessions and ``agent_create_plan``) so each
can be tried without a key. How it picks a tool and fills its arguments: ``offline_tools``; its
plans, refinements and reflections: ``offline_plans`` (docs/offline-model.md says both for users).

- A chat prompt that names a tool or asks for what one does calls it (one call); a tool's answer
  is then summarised in words. A prompt that asks for nothing a tool does gets a short help text.
- A plan task (the executor's turn "Task i of n (tN): title") calls the tool its title and
  description ask for, with the arguments they give; after its answer (or when no tool fits) it
  says in one line that the task is done, or that it could not be done and why.
- Text streams in chunks of a few words, ``pace_s`` apart (``make dev``: ``OFFLINE_MODEL_PACE_MS``,
  default 40 ms per chunk, about what Gemini Flash streams); tests construct it without a pace.
- It says it is offline once per run: its first text of a run starts with ``LABEL``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from shared.models.base import (
    DeltaSink,
    FunctionResponse,
    GroundedAnswer,
    ModelRequest,
    ModelResponse,
    Part,
    ToolDeclaration,
    Turn,
    Usage,
)
from shared.models.offline_plans import DONE_PREFIX, FAILED_PREFIX, LABEL, structured
from shared.models.offline_tools import Choice, choose
from shared.models.scripted import call

__all__ = ["LABEL", "OfflineModel"]
_TASK = re.compile(r"^Task (\d+) of (\d+) \(([\w-]+)\): (.*)", re.DOTALL)
CHUNK_WORDS = 3
EXAMPLES = ("What time is it in Tokyo? (an MCP tool, with MCP_SERVERS or DEV_FAKES=1)",
            "Remember that I prefer window seats (a side effect: it asks for approval)",
            "Make a plan to check the time in Tokyo, then remember it (a plan, executed step by step)")
EXAMPLES_WITHOUT_TIME = ("Remember that I prefer window seats (a side effect: it asks for approval)",
                         "Make a plan to remember that I prefer window seats, then search my memories for seats "
                         "(a plan, executed step by step)")
"""What the help suggests when no ``*_get_current_time`` tool is registered (plain ``make dev``): only
prompts this deployment can answer (it suggested the time in Tokyo, then answered it with help)."""


class OfflineModel:
    def __init__(self, pace_s: float = 0.0) -> None:
        self.pace_s = pace_s

    @property
    def name(self) -> str:
        return "offline"

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        if request.response_schema is not None:
            turn = Turn(role="model", parts=[Part(text=json.dumps(structured(request), ensure_ascii=False))])
        else:
            turn = self._answer(request)
            if on_delta is not None:
                self._stream(turn, on_delta)
        return ModelResponse(turn=turn, usage=_usage(request, turn), finish_reason="STOP", model_version="offline")

    def grounded_search(self, query: str, *, timeout_s: float | None = None) -> GroundedAnswer:
        """No search is made offline: a clearly labelled answer saying so (``available`` false)."""
        return GroundedAnswer(text=f"{LABEL} Web search is unavailable offline; nothing was searched for "
                                   f"{query[:200]!r}.", usage=Usage(requests=1), model_version="offline",
                              available=False)

    def _stream(self, turn: Turn, on_delta: DeltaSink) -> None:
        for p in turn.parts:
            if not p.text:
                continue
            pieces = re.findall(r"\S+\s*", p.text)
            for i in range(0, len(pieces), CHUNK_WORDS):
                if self.pace_s > 0 and i:
                    time.sleep(self.pace_s)
                on_delta("thought" if p.thought else "text", "".join(pieces[i:i + CHUNK_WORDS]))

    # ---- answers ---------------------------------------------------------------------------
    def _answer(self, request: ModelRequest) -> Turn:
        last = request.turns[-1] if request.turns else Turn(role="user", parts=[Part(text="")])
        responses = [p.function_response for p in last.parts if p.function_response is not None]
        task = _current_task(request.turns)
        labelled = _labelled(request.turns, whole=task is not None)
        if task is not None:
            return _act(task, responses, request.tools, labelled)
        if responses:
            return _text(summarise(responses), labelled)
        choice = choose(last.text.strip(), request.tools)
        if choice is None:
            return _text(_help(last.text.strip(), request.tools), labelled)
        if choice.missing:
            return _text(_needs(choice), labelled)
        return Turn(role="model", parts=[call(choice.tool.name, choice.args)])


def _text(text: str, labelled: bool) -> Turn:
    return Turn(role="model", parts=[Part(text=text if labelled else f"{LABEL} {text}")])


def _labelled(turns: list[Turn], *, whole: bool) -> bool:
    """Whether this run already said it is offline: a model turn with ``LABEL`` since the run's
    prompt (the last user turn with text), or anywhere in a plan's execution (``whole``)."""
    start = 0
    if not whole:
        start = max((i for i, t in enumerate(turns) if t.role == "user" and t.text.strip()), default=0)
    return any(t.role == "model" and LABEL in t.text for t in turns[start:])


def _current_task(turns: list[Turn]) -> tuple[str, str] | None:
    """The plan task being executed (its title, its whole text), from the executor's task turn."""
    for t in reversed(turns):
        texts = [p.text.strip() for p in t.parts if p.text and p.text.strip() and not p.thought]
        if t.role == "user" and texts:
            m = next((m for m in map(_TASK.match, reversed(texts)) if m is not None), None)
            if m is None:
                return None
            title, _, description = m.group(4).strip().partition("\n")
            title, description = title.strip(), description.strip()
            # A description that repeats the title (the offline planner's) is the task's whole text.
            same = description.lower().startswith(title.rstrip("…").lower())
            return title, description if same else f"{title}\n{description}".strip()
    return None


def _act(task: tuple[str, str], responses: list[FunctionResponse], tools: list[ToolDeclaration],
         labelled: bool) -> Turn:
    title, text = task
    lower = title[:1].lower() + title[1:]
    if responses:
        r = responses[-1]
        if r.response.get("rejected") is True:
            return _text(f"The user rejected {r.name}, so the task \"{title}\" was not done.", labelled)
        if r.response.get("error"):
            return _text(f"{FAILED_PREFIX}{lower}: {r.name} answered an error: {_short(r.response['error'])}",
                         labelled)
        return _text(f"{DONE_PREFIX}{title}. {summarise([r])}", labelled)
    choice = choose(text, [t for t in tools if not t.name.startswith("agent_")])
    if choice is None:
        return _text(f"{DONE_PREFIX}{title}. No tool fits this step, so there was nothing to call.", labelled)
    if choice.missing:
        return _text(f"{FAILED_PREFIX}{lower}: {_needs(choice)}", labelled)
    reason = f"To {lower[:1].lower() + lower[1:]}, I will call {choice.tool.name}."
    return Turn(role="model", parts=[Part(text=reason if labelled else f"{LABEL} {reason}"),
                                     call(choice.tool.name, choice.args)])


def _needs(choice: Choice) -> str:
    return (f"To call {choice.tool.name} I need {', '.join(choice.missing)}, which the prompt does not say "
            f"(for example: {_example(choice.tool)}).")


def _example(tool: ToolDeclaration) -> str:
    props = tool.parameters.get("properties", {}) or {}
    hints = {"repo": "on owner/repo", "number": "#12", "title": "titled \"…\"", "body": "saying \"…\"",
             "url": "https://…", "to": "to someone@example.com", "channel": "#general", "path": "README.md",
             "timezone": "in Tokyo"}
    said = [hints[p] for p in props if p in hints]
    return f"\"{tool.name.replace('_', ' ')} {' '.join(said)}\"" if said else f"\"use {tool.name}\""


def _help(text: str, tools: list[ToolDeclaration]) -> str:
    names = [t.name for t in tools if not t.name.startswith("agent_")]
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return (f"You said: \"{text[:300]}\". I call a tool when you name it (\"use {names[0] if names else 'a tool'}\") "
            f"or ask for what it does; tools here: {shown or 'none'}. For example: \"" + "\", \"".join(
                e.split(" (")[0] for e in examples(tools)) + "\".")


def examples(tools: list[ToolDeclaration]) -> tuple[str, ...]:
    """The example prompts to suggest, each with what it shows in parentheses."""
    return EXAMPLES if any(t.name.endswith("get_current_time") for t in tools) else EXAMPLES_WITHOUT_TIME


def _short(value: Any, limit: int = 240) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def summarise(responses: list[FunctionResponse]) -> str:
    """Each tool answer in words: a rejection, an error, a plan's outcome or its main fields."""
    lines: list[str] = []
    for r in responses:
        body = r.response
        if body.get("rejected") is True:
            lines.append(f"You rejected {r.name}, so nothing was done.")
        elif body.get("error"):
            lines.append(f"{r.name} answered an error: {_short(body['error'])}")
        elif r.name == "agent_create_plan" or r.name == "agent_execute_plan":
            tasks = body.get("tasks", [])
            insights = body.get("insights") or [t.get("title", "") for t in tasks if isinstance(t, dict)]
            steps = "; ".join(str(i) for i in insights[:8])
            lines.append(f"The plan {body.get('planId', '')} is {body.get('status', 'done')}: {steps}.")
        else:
            lines.append(f"{r.name} answered: {render(body.get('result', body))}.")
    return "\n".join(lines)


def render(value: Any, limit: int = 600) -> str:
    """A tool's answer as plain words: ``key: value`` pairs, lists as their first items."""
    if isinstance(value, dict):
        text = "; ".join(f"{k}: {render(v, 160)}" for k, v in list(value.items())[:8])
    elif isinstance(value, list):
        shown = [render(v, 160) if not isinstance(v, dict) else _one(v) for v in value[:5]]
        text = ("(none)" if not value else " | ".join(shown) + (f" (+{len(value) - 5} more)" if len(value) > 5 else ""))
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif value is None:
        text = "none"
    else:
        text = str(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _one(item: dict[str, Any]) -> str:
    """A list item in a few words: its text-like fields (title, name, text, …) or its first ones."""
    keys = [k for k in ("title", "name", "text", "subject", "summary", "number", "id") if k in item] or list(item)[:3]
    return ", ".join(f"{render(item[k], 120)}" for k in keys[:3])


def _usage(request: ModelRequest, turn: Turn) -> Usage:
    """Roughly what a model would count: a token per word in, a token per word out, 10 per call."""
    words_in = sum(len((p.text or "").split()) for t in request.turns for p in t.parts) + \
        len(request.system_instruction.split())
    words_out = sum(len((p.text or "").split()) for p in turn.parts) + 10 * len(turn.function_calls)
    return Usage(requests=1, input_tokens=words_in, output_tokens=words_out, total_tokens=words_in + words_out)
