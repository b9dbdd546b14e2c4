"""A real MCP server (the official SDK's ``MCPServer``, stdio) whose tools have side effects that
the server itself counts: every call appends one JSON line to the file named on its command line
(``{"tool", "args", "effect"}``), so the reliability scenario (``make reliability``) counts
executions on the server's side, not ours.

- ``append_note``: no annotations (a side effect, not idempotent: each call is one more note).
- ``put_note``: ``idempotentHint``: a call repeating an earlier one's arguments is recorded with
  ``effect: false`` (the note is already there), as a keyed service would.
"""

import fcntl
import json
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

app = MCPServer("ledger")


def _record(tool: str, args: dict[str, Any], *, keyed: bool) -> bool:
    """Append the call under an exclusive lock; whether it took effect."""
    line = {"tool": tool, "args": args}
    with open(sys.argv[1], "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        seen = [json.loads(raw) for raw in f if raw.strip()]
        effect = not (keyed and any(s["tool"] == tool and s["args"] == args and s["effect"] for s in seen))
        f.write(json.dumps({**line, "effect": effect}, sort_keys=True) + "\n")
        f.flush()
    return effect


@app.tool()
def append_note(to: str, body: str) -> dict[str, Any]:
    """Append a note for someone (each call appends one more)."""
    _record("append_note", {"to": to, "body": body}, keyed=False)
    return {"appended": True, "to": to}


@app.tool(annotations=ToolAnnotations(readOnlyHint=False, idempotentHint=True))
def put_note(to: str, body: str) -> dict[str, Any]:
    """Put a note for someone (idempotent: the same note twice is kept once)."""
    effect = _record("put_note", {"to": to, "body": body}, keyed=True)
    return {"put": True, "new": effect}


if __name__ == "__main__":
    app.run()
