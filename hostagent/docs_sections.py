"""The generated sections of docs/host-protocol.md: every message's JSON Schema and the log line's.

``python -m hostagent.docs_sections`` rewrites them from the models; the test suite checks
the document holds exactly what this module generates, so the published schemas are the ones the
agent and the reference host validate against.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hostagent.protocol import MESSAGES
from hostagent.schemas import ENVELOPE_SCHEMA, message_schema
from hostagent.session_log import log_record_schema

DOC = Path(__file__).resolve().parents[1] / "docs" / "host-protocol.md"
_SENDER = {"agent": "agent → host", "host": "host → agent", "relay": "relay → agent"}


def _block(schema: object) -> str:
    return "```json\n" + json.dumps(schema, indent=2, ensure_ascii=False) + "\n```\n"


def message_schemas_markdown() -> str:
    parts = ["#### `envelope` (every frame, before its type is known)\n\n", _block(ENVELOPE_SCHEMA)]
    for type_, (_, sender) in MESSAGES.items():
        parts += [f"\n#### `{type_}` ({_SENDER[sender]})\n\n", _block(message_schema(type_))]
    return "".join(parts)


def log_schema_markdown() -> str:
    return _block(log_record_schema())


SECTIONS = {"message-schemas": message_schemas_markdown, "log-schema": log_schema_markdown}


def section(text: str, name: str) -> str:
    """The generated part of ``text`` between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``."""
    match = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, flags=re.DOTALL)
    if match is None:
        raise ValueError(f"{DOC.name} has no {name} section")
    return match.group(1)


def write_docs(path: Path = DOC) -> None:
    text = path.read_text()
    for name, build in SECTIONS.items():
        old = section(text, name)
        text = text.replace(f"<!-- {name}:begin -->\n{old}", f"<!-- {name}:begin -->\n{build()}", 1)
    path.write_text(text)


if __name__ == "__main__":
    write_docs()
