"""Provider-neutral model contract: turns, parts, requests, responses and usage.

Turns mirror Gemini's ``Content``/``Part`` wire shape one to one so that a run can store the
model's turns *verbatim* (including ``thoughtSignature``) and replay them later in another
process. Gemini 3 rejects a follow-up whose functionCall parts lost their signature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from shared.token_usage import Usage as Usage


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class FunctionCall(_Wire):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class FunctionResponse(_Wire):
    name: str
    response: dict[str, Any]
    id: str | None = None


class Blob(_Wire):
    """A file's bytes in a turn (Gemini's ``inlineData``): ``data`` is their base64 text."""

    mime_type: str
    data: str
    display_name: str | None = None
    """The file's name (kept by us; not sent back to the model)."""


class FileData(_Wire):
    """A file by reference in a turn (Gemini's ``fileData``)."""

    file_uri: str
    mime_type: str | None = None
    display_name: str | None = None


class Part(_Wire):
    """One part of a turn. ``thought_signature`` is the base64 text of Gemini's opaque bytes."""

    text: str | None = None
    thought: bool = False
    thought_signature: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None


class Turn(_Wire):
    role: Literal["user", "model"]
    parts: list[Part]

    @property
    def function_calls(self) -> list[FunctionCall]:
        return [p.function_call for p in self.parts if p.function_call is not None]

    @property
    def text(self) -> str:
        """The visible (non-thought) text of the turn."""
        return "".join(p.text for p in self.parts if p.text and not p.thought)

    @property
    def files(self) -> list[Part]:
        """The parts that are files (bytes or a reference), in order."""
        return [p for p in self.parts if p.inline_data is not None or p.file_data is not None]


class ToolDeclaration(_Wire):
    """What the model is told about a tool: name, description and a JSON schema of its args."""

    name: str
    description: str
    parameters: dict[str, Any]


class ModelRequest(_Wire):
    system_instruction: str = ""
    turns: list[Turn]
    tools: list[ToolDeclaration] = Field(default_factory=list)
    response_schema: dict[str, Any] | None = None
    """JSON schema of a structured (JSON) answer; when set, the model answers JSON text."""
    temperature: float | None = None
    timeout_s: float | None = None
    """Wall-clock budget for this call including retries (the loop's remaining deadline)."""


class ModelResponse(_Wire):
    turn: Turn
    usage: Usage = Usage()
    finish_reason: str | None = None
    model_version: str | None = None


class SearchSource(_Wire):
    """A web page a grounded answer rests on (Gemini's grounding chunk)."""

    title: str = ""
    uri: str


class GroundedAnswer(_Wire):
    """The answer of one model call grounded with Google Search, and what it rests on."""

    text: str
    sources: list[SearchSource] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)
    """The search queries the model ran."""
    usage: Usage = Usage()
    model_version: str | None = None
    available: bool = True
    """False when no search was made (the offline model); ``text`` then says why."""


DeltaKind = Literal["text", "thought"]
DeltaSink = Callable[[DeltaKind, str], None]


class Model(Protocol):
    """One required method. Streaming deltas go to ``on_delta`` as they arrive."""

    @property
    def name(self) -> str: ...

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse: ...


class SearchModel(Protocol):
    """A model that can answer with Google Search grounding (``google_web_search``)."""

    @property
    def name(self) -> str: ...

    def grounded_search(self, query: str, *, timeout_s: float | None = None) -> GroundedAnswer: ...
