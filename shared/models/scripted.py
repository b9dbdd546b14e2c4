"""In-process models for tests and benchmarks (shipped in the package, as pydantic-ai does).

``ScriptedModel`` answers from a fixed script and checks it was used up (``assert_complete``);
``FunctionModel`` answers through a function of the request.
"""

from __future__ import annotations

import base64
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from shared.models.base import (
    DeltaSink,
    FunctionCall,
    ModelRequest,
    ModelResponse,
    Part,
    Turn,
    Usage,
)

ScriptItem = Turn | ModelResponse | Exception | Callable[[ModelRequest], ModelResponse]
_ids = itertools.count(1)


def text_turn(text: str, *, thought: str | None = None) -> Turn:
    parts = [Part(text=thought, thought=True)] if thought else []
    return Turn(role="model", parts=[*parts, Part(text=text)])


def call(name: str, args: dict[str, Any] | None = None, *, signed: bool = True) -> Part:
    """A functionCall part; ``signed`` gives it a thought signature like Gemini 3 does."""
    n = next(_ids)
    sig = base64.b64encode(f"sig-{n}".encode()).decode() if signed else None
    return Part(function_call=FunctionCall(name=name, args=args or {}, id=f"call-{n}"), thought_signature=sig)


def calls_turn(*parts: Part) -> Turn:
    return Turn(role="model", parts=list(parts))


def _emit(turn: Turn, on_delta: DeltaSink | None) -> None:
    if on_delta is None:
        return
    for p in turn.parts:
        if p.text:
            on_delta("thought" if p.thought else "text", p.text)


def _usage_for(turn: Turn) -> Usage:
    out = sum(len((p.text or "").split()) for p in turn.parts) + 10 * len(turn.function_calls)
    return Usage(requests=1, input_tokens=10, output_tokens=out, total_tokens=10 + out)


class ScriptedModel:
    """Answers each ``generate`` with the next script item (an Exception item is raised)."""

    def __init__(self, script: Sequence[ScriptItem], *, name: str = "scripted-model") -> None:
        self._script = list(script)
        self._lock = threading.Lock()
        self._name = name
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        with self._lock:
            self.requests.append(request)
            if not self._script:
                raise AssertionError(f"{type(self).__name__}: script exhausted after {len(self.requests) - 1} calls")
            item = self._script.pop(0)
        if isinstance(item, Exception):
            raise item
        if isinstance(item, Turn):
            response = ModelResponse(turn=item, usage=_usage_for(item), finish_reason="STOP")
        elif isinstance(item, ModelResponse):
            response = item
        else:
            response = item(request)
        _emit(response.turn, on_delta)
        return response

    @property
    def remaining(self) -> int:
        return len(self._script)

    def assert_complete(self) -> None:
        if self._script:
            raise AssertionError(f"{type(self).__name__}: {len(self._script)} scripted responses unused")


class FunctionModel:
    """Answers through ``fn(request)``; deltas are emitted from the returned turn."""

    def __init__(self, fn: Callable[[ModelRequest], Turn | ModelResponse], *, name: str = "function-model") -> None:
        self._fn = fn
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        out = self._fn(request)
        response = out if isinstance(out, ModelResponse) else ModelResponse(turn=out, usage=_usage_for(out))
        _emit(response.turn, on_delta)
        return response
