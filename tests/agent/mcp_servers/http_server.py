"""A real MCP server over Streamable HTTP (the official SDK's ``MCPServer`` under uvicorn) that
answers only requests carrying ``Authorization: Bearer <token>`` (the token is its second
argument; the port its first). Its tool ``add_note`` is annotated as having a side effect that
is idempotent; ``list_notes`` as read-only. Used by tests/agent/test_mcp_tools.py."""

import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

app = MCPServer("notes-http")
NOTES: list[str] = []


@app.tool(annotations=ToolAnnotations(readOnlyHint=False, idempotentHint=True))
def add_note(text: str) -> dict[str, Any]:
    """Add a note (idempotent: a note with the same text is kept once)."""
    if text not in NOTES:
        NOTES.append(text)
    return {"notes": list(NOTES)}


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes() -> dict[str, Any]:
    """The notes kept so far."""
    return {"notes": list(NOTES)}


def guarded(inner: Any, token: str) -> Any:
    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await inner(scope, receive, send)

    return asgi


if __name__ == "__main__":
    port, token = int(sys.argv[1]), sys.argv[2]
    uvicorn.run(guarded(app.streamable_http_app(), token), host="127.0.0.1", port=port, log_level="warning")
