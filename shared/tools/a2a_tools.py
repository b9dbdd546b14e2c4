"""Remote A2A agents as tools (docs/a2a.md, "Remote agents as tools"): each agent of ``A2A_AGENTS``
(and each of a user's own agents) becomes

- ``{name}_send_message(message, agentTaskId?)``: a message to the agent, a new task in the run's
  own context (``contextId`` = ``agent-runtime-{runId}``) or the answer to a task of the agent that
  waits for input. A side effect unless the agent is declared ``sideEffects: false``: it goes
  through our policy and approvals like any tool. The A2A message id is the call's action id,
  stable across retries: the idempotency key. A call cut off by a crash is reconciled, never sent
  blindly again: recovery asks the agent for a task holding that message id (found: its state is
  the result; not found: sent once).
- ``{name}_get_task(agentTaskId)``: read-only, waits for a task that was still working when the call
  that started it returned (polled, never sent again).

A remote task that waits for input (``input-required``) is told to the model with the agent's
question; answering it is another ``{name}_send_message`` with that ``agentTaskId``, which, being a
side effect, is our approval: the user sees the question and the answer before it is sent.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, Field

from shared.config import A2aAgent, Settings
from shared.tools.context import ToolContext
from shared.tools.registry import Tool, ToolRegistry, build_tool

NAME_LIMIT = 64
_ID = r"^[A-Za-z0-9_.:-]{1,256}$"


Message = Annotated[str, Field(min_length=1, max_length=16_000)]
AgentTaskId = Annotated[str, Field(pattern=_ID)]


def tool_names(agent: A2aAgent) -> tuple[str, str]:
    base = re.sub(r"[^A-Za-z0-9_]", "_", agent.name)[:40]
    return f"{base}_send_message", f"{base}_get_task"


def context_of(ctx: ToolContext) -> str:
    """The remote context of our run: every new task the run starts at an agent shares it."""
    return f"agent-runtime-{ctx.run_id}"


def agent_tools(agent: A2aAgent, settings: Settings) -> list[Tool]:
    from shared.connectors import a2a_remote as remote

    send_name, get_name = tool_names(agent)

    def result_of(task: remote.RemoteTask) -> dict[str, Any]:
        out = task.to_result()
        if task.state in ("input-required", "auth-required"):
            out["note"] = (f"{agent.name} waits for an answer: call {send_name} with agentTaskId "
                           f"{task.task_id} and the answer")
        elif task.state in ("working", "submitted"):
            out["note"] = f"{agent.name} is still working: call {get_name} with agentTaskId {task.task_id} later"
        return out

    def send_message(ctx: ToolContext, message: Message, agentTaskId: AgentTaskId | None = None) -> dict[str, Any]:
        timeout = ctx.call_budget(f"A2A agent {agent.name}", settings.a2a_timeout_s)
        try:
            task = remote.send(agent, message_id=ctx.action_id, text=message, context_id=context_of(ctx),
                               task_id=agentTaskId, timeout_s=timeout)
        except remote.RemoteError as exc:
            if exc.maybe_sent and agent.side_effects:
                from shared.errors import OutcomeUnknown

                raise OutcomeUnknown(f"{exc}; it may or may not have been received, and is not sent again") from None
            raise
        return result_of(task)

    def reconcile(ctx: ToolContext, args: BaseModel) -> dict[str, Any] | None:
        timeout = ctx.call_budget(f"A2A agent {agent.name}", settings.a2a_timeout_s)
        found = remote.find(agent, message_id=ctx.action_id, context_id=context_of(ctx),
                            task_id=getattr(args, "agentTaskId", None), timeout_s=timeout)
        return None if found is None else result_of(found)

    def get_task(ctx: ToolContext, agentTaskId: AgentTaskId) -> dict[str, Any]:
        timeout = ctx.call_budget(f"A2A agent {agent.name}", settings.a2a_timeout_s)
        return result_of(remote.wait(agent, agentTaskId, timeout_s=timeout))

    def preview(args: BaseModel) -> str:
        task_id = getattr(args, "agentTaskId", None)
        to = f"answer to its task {task_id}" if task_id else "a new task"
        return f"Message to A2A agent {agent.name} ({to}): {getattr(args, 'message', '')}"[:500]

    send_message.__doc__ = (f"Send a message to the remote agent {agent.name} (A2A) and wait for its answer.\n\n"
                            "Args:\n    message: What to tell the agent.\n"
                            "    agentTaskId: The agent's task to answer when it waits for input.")
    get_task.__doc__ = (f"Wait for a task of the remote agent {agent.name} that was still working.\n\n"
                        "Args:\n    agentTaskId: The agent's task id.")
    return [build_tool(send_message, side_effect=agent.side_effects, name=send_name, preview=preview,
                       reconcile=reconcile if agent.side_effects else None),
            build_tool(get_task, side_effect=False, name=get_name)]


def add_agents(registry: ToolRegistry, agents: tuple[A2aAgent, ...] | list[A2aAgent], settings: Settings) -> None:
    """Add each agent's tools; a name already taken leaves that tool out."""
    for agent in agents:
        for tool in agent_tools(agent, settings):
            if registry.get(tool.name) is None:
                registry.add(tool)
