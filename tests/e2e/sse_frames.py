"""A small reader of Server-Sent Events bodies for the tests (WHATWG field rules: ``event``, ``id``,
``data``; a line starting with ``:`` is a comment)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Frame:
    event: str | None
    id: str | None
    data: str

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.data)  # type: ignore[no-any-return]


def parse_sse(body: str) -> tuple[list[Frame], list[str]]:
    """The frames (events) and the comment lines of an SSE body."""
    frames: list[Frame] = []
    comments: list[str] = []
    event: str | None = None
    id_: str | None = None
    data: list[str] = []
    for line in body.split("\n"):
        if line == "":
            if data:
                frames.append(Frame(event, id_, "\n".join(data)))
            event, data = None, []
            continue
        if line.startswith(":"):
            comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "id":
            id_ = value
        elif name == "data":
            data.append(value)
    return frames, comments
