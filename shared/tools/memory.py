"""The memory tools: ``save_memory`` (side effect) and ``search_memory`` (read-only)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from shared.errors import ToolError
from shared.state.records import MemoryRecord
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_MEMORY_CHARS = 1000


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 1}


def _save_preview(args: BaseModel) -> str:
    text = str(getattr(args, "text", ""))
    tags = getattr(args, "tags", None) or []
    suffix = f" (tags: {', '.join(tags)})" if tags else ""
    return f'Remember: "{text[:200]}"{suffix}'


def register(registry: ToolRegistry) -> None:
    @registry.tool(side_effect=True, idempotent=True, preview=_save_preview)
    def save_memory(ctx: ToolContext, text: str, tags: list[str] | None = None) -> dict[str, Any]:
        """Save a durable fact or preference about the user so later conversations can use it.

        Args:
            text: The fact to remember, one or two sentences in the third person.
            tags: Optional short labels such as "preference" or "family".
        """
        text = text.strip()
        if not text:
            raise ToolError("text must not be empty")
        if len(text) > MAX_MEMORY_CHARS:
            raise ToolError(f"text is longer than {MAX_MEMORY_CHARS} characters")
        # The memory id derives from the action id, so a retried call rewrites the same document.
        memory = MemoryRecord(id=f"m-{ctx.action_id}", text=text, tags=list(tags or []), run_id=ctx.run_id)
        ctx.users.save_memory(ctx.uid, memory)
        return {"saved": True, "memoryId": memory.id}

    @registry.tool(side_effect=False)
    def search_memory(ctx: ToolContext, query: str, limit: int = 5) -> dict[str, Any]:
        """Search what is remembered about the user.

        Args:
            query: Words to look for.
            limit: Maximum number of memories to return (1-20).
        """
        limit = max(1, min(20, limit))
        wanted = _words(query)
        scored: list[tuple[int, float, MemoryRecord]] = []
        for m in ctx.users.list_memories(ctx.uid, limit=200):
            score = len(wanted & (_words(m.text) | {t.lower() for t in m.tags}))
            if score or not wanted:
                scored.append((score, m.created_at, m))
        scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
        hits = [{"id": m.id, "text": m.text, "tags": m.tags} for _, _, m in scored[:limit]]
        return {"memories": hits, "count": len(hits)}
