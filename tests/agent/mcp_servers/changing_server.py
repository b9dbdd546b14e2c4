"""A real MCP server over Streamable HTTP (the official SDK's ``MCPServer`` under uvicorn) whose
tool list changes: ``unlock`` adds the tool ``secret`` and sends ``notifications/tools/list_changed``
on the call's stream. Its port is its first argument. Used by tests/agent/test_mcp_listings.py."""

import sys

import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

app = MCPServer("changing")


def secret() -> str:
    """The secret the server unlocked."""
    return "42"


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def unlock(ctx: Context) -> str:
    """Unlock the secret tool (the server's tool list changes)."""
    app.add_tool(secret, annotations=ToolAnnotations(readOnlyHint=True))
    await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
    return "unlocked"


if __name__ == "__main__":
    uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
