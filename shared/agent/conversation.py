"""A run's first model turns from its thread's conversation and its prompt."""

from __future__ import annotations

from collections.abc import Sequence

from shared.api import MAX_CONVERSATION_FOR_MODEL, ConversationItem
from shared.models.base import Part, Turn


def conversation_turns(items: Sequence[ConversationItem], prompt: str,
                       attachments: Sequence[Part] = ()) -> list[Turn]:
    """The last 30 conversation messages and the prompt as model turns (same-role runs merged);
    ``attachments`` (files sent with the prompt) close the prompt's turn."""
    turns: list[Turn] = []
    for item in [*items[-MAX_CONVERSATION_FOR_MODEL:], ConversationItem(role="user", text=prompt)]:
        role = "model" if item.role == "assistant" else "user"
        if not item.text.strip():
            continue
        if turns and turns[-1].role == role:
            turns[-1] = Turn(role=role, parts=[*turns[-1].parts, Part(text=item.text)])
        else:
            turns.append(Turn(role=role, parts=[Part(text=item.text)]))
    if attachments:
        if turns and turns[-1].role == "user":
            turns[-1] = Turn(role="user", parts=[*turns[-1].parts, *attachments])
        else:
            turns.append(Turn(role="user", parts=list(attachments)))
    return turns
