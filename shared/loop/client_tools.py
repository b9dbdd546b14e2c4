"""Client tools: tools the client declares and runs itself (AG-UI frontend tools, docs/ag-ui.md).

The run's ``client_tools`` (``{name, description, parameters}``) are offered to the model like the
host's virtual tools, with the client's JSON schema. A call is decided like a call that needs
approval (``loop/tool_calls.py``): the run pauses with an approval whose reason says the client
answers it, which every stream, the inbox, the expiry sweep and the resume path already know. The
client's answer decides that approval (``approve`` with the result, stored as the action's
``client_result``); when the resumed run executes the call, the tool answers with that result.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from shared.loop.virtual import HostCall, VirtualOutcome
from shared.models.base import ToolDeclaration
from shared.tools.registry import Tool

CLIENT_REASON = "the client runs this tool (a frontend tool): the run waits for its result"


class ClientArgs(BaseModel):
    """Arguments of a client tool: whatever the client's schema says (the client validates them)."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class ClientTool(Tool):
    parameters: dict[str, Any] = field(default_factory=dict)

    def declaration(self) -> ToolDeclaration:
        schema = self.parameters or {"type": "object", "properties": {}}
        return ToolDeclaration(name=self.name, description=self.description, parameters=schema)


def _answer(call: HostCall, args: BaseModel) -> VirtualOutcome:
    result = call.action.client_result
    if result is None:
        return VirtualOutcome(error="the client did not send a result for this call")
    return VirtualOutcome(result=result)


def _preview(args: BaseModel) -> str:
    return ", ".join(f"{k}: {v}" for k, v in (args.model_extra or {}).items())[:300]


@functools.lru_cache(maxsize=256)
def _tool(name: str, description: str, parameters: str) -> ClientTool:
    import json

    return ClientTool(name=name, description=description, args_model=ClientArgs, fn=_answer, side_effect=False,
                      idempotent=False, preview_fn=_preview, host=True, parameters=json.loads(parameters))


def client_tools(declared: list[dict[str, Any]]) -> dict[str, Tool]:
    """The run's client tools by name."""
    import json

    return {t["name"]: _tool(t["name"], t.get("description", ""), json.dumps(t.get("parameters") or {},
                                                                           sort_keys=True))
            for t in declared}


def is_client_tool(tool: Tool | None) -> bool:
    return isinstance(tool, ClientTool)
