"""The offline model used by `make dev` without a key: labelled, and drives the real tool flow."""

from __future__ import annotations

from shared.models.base import FunctionResponse, ModelRequest, Part, ToolDeclaration, Turn
from shared.models.offline import LABEL, OfflineModel

TOOLS = [ToolDeclaration(name=n, description="", parameters={}) for n in ("save_memory", "search_memory")]


def ask(text: str) -> Turn:
    return OfflineModel().generate(ModelRequest(turns=[Turn(role="user", parts=[Part(text=text)])], tools=TOOLS)).turn


def test_remember_calls_save_memory() -> None:
    (fc,) = ask("Remember that I prefer window seats.").function_calls
    assert fc.name == "save_memory" and fc.args == {"text": "I prefer window seats"}


def test_recall_calls_search_memory_even_with_the_word_remember() -> None:
    (fc,) = ask("What do you remember about seats?").function_calls
    assert fc.name == "search_memory" and fc.args == {"query": "about seats"}


def test_plain_text_and_tool_results_are_labelled() -> None:
    assert ask("hello").text.startswith(LABEL)
    deltas: list[str] = []
    result = Turn(role="user", parts=[Part(function_response=FunctionResponse(name="x", response={"a": 1}))])
    turn = OfflineModel().generate(ModelRequest(turns=[result], tools=TOOLS),
                                   on_delta=lambda kind, d: deltas.append(d)).turn
    assert turn.text.startswith(LABEL) and "".join(deltas) == turn.text
