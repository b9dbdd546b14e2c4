"""A real MCP server (the official SDK's ``MCPServer``, stdio) whose one tool writes a line to the
file named on its command line and then the process dies before answering: a server killed
mid-call, after its side effect. Used by tests/agent/test_mcp_tools.py."""

import os
import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("dying")


@app.tool()
def write_note(text: str) -> str:
    """Write a note (a side effect; the tool has no annotations)."""
    with open(sys.argv[1], "a") as f:
        f.write(text + "\n")
    os._exit(1)


if __name__ == "__main__":
    app.run()
