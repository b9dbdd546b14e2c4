"""Action (seed 002 §2.3): turns a planned action into protocol messages and records what happened.

A ``tool.call`` is recorded in memory (episode, plan lineage, ordinal) and the log before it is
sent, then waits, bounded, for its ``tool.result`` or ``error``; the phase is ``WAITING_RESULT``
meanwhile (no planning, no second call). Verification of the resulting state is the verifier's.
"""

from __future__ import annotations

from dataclasses import dataclass

from hostagent.errors import FrameRefused, HostAgentError, HostError, ReplyTimeout
from hostagent.memory import AgentMemory
from hostagent.perception import observe
from hostagent.plans import ActionOutcome, NavigationPlan, PlannedAction
from hostagent.protocol import AgentMessage, ChatMessage, Envelope, SessionEnd, SnapshotGet, ToolCall, envelope
from hostagent.relay_client import RelayClient
from hostagent.session_log import SessionLog


@dataclass
class Executor:
    client: RelayClient
    memory: AgentMemory
    log: SessionLog
    timeout_s: float

    def _envelope(self, type_: str, payload: ToolCall | AgentMessage | SnapshotGet | SessionEnd) -> Envelope:
        return envelope(type_, payload, session_id=self.memory.working.session_id)

    async def tool_call(self, plan: NavigationPlan, action: PlannedAction, *,
                        retry_of: str | None = None) -> tuple[ActionOutcome, Envelope]:
        assert action.tool is not None
        env = self._envelope("tool.call", ToolCall(name=action.tool, params=action.params, reason=action.reason))
        self.memory.record(plan, env.id, action, retry_of=retry_of)
        self.memory.next_ordinal(env.id)
        self.log.write("action", "tool.call", id=env.id, reason=action.reason,
                       data={"planId": plan.planId, "tool": action.tool, "params": action.params,
                             "expectedStage": action.expectedStage, "retryOf": retry_of})
        self.memory.working.phase = "WAITING_RESULT"
        try:
            await self.client.request(env, frozenset({"tool.result"}), self.timeout_s)
            outcome = ActionOutcome(ok=True)
        except HostError as err:
            outcome = ActionOutcome(ok=False, code=err.code, replan=True, message=err.message)
        except ReplyTimeout as err:
            outcome = ActionOutcome(ok=False, code="TIMEOUT_RESULT", replan=True, message=err.message)
        except FrameRefused as err:  # the reply may have been the refused frame: resync, replan
            outcome = ActionOutcome(ok=False, code=err.code, replan=True, message=err.message)
        except HostAgentError as err:  # the connection or the protocol failed: the session ends
            self.memory.settle(env.id, "failed", code=err.code, message=err.message)
            self.log.write("outcome", "tool.call", id=env.id, outcome="failed", code=err.code, reason=err.message,
                           data={"planId": plan.planId, "tool": action.tool})
            raise
        finally:
            self.memory.working.phase = "SESSION_ACTIVE"
        self.memory.settle(env.id, outcome.label, code=outcome.code, message=outcome.message)
        self.log.write("outcome", "tool.call", id=env.id, outcome=outcome.label, code=outcome.code,
                       reason=outcome.message, data={"planId": plan.planId, "tool": action.tool})
        return outcome, env

    async def message(self, plan: NavigationPlan, action: PlannedAction) -> Envelope:
        kind = action.payload.get("kind")
        env = self._envelope("agent.message", AgentMessage(text=str(action.payload["text"]), kind=kind))
        self.memory.record(plan, env.id, action)
        self.log.write("action", "agent.message", id=env.id, reason=action.reason,
                       data={"planId": plan.planId, "kind": kind})
        await self.client.send(env)
        working = self.memory.working
        working.messages.append(ChatMessage(role="agent", text=str(action.payload["text"]), stage=working.stage))
        if kind == "question":  # the user's next message answers it
            working.questions.append(str(action.payload["text"]))
            working.open_question = str(action.payload["text"])
        self.memory.settle(env.id, "success")
        return env

    async def snapshot(self, why: str) -> Envelope:
        """Read the host's state; a refused frame instead of the reply asks again (the refused
        frames are bounded: the client ends the session at its limit)."""
        while True:
            env = self._envelope("snapshot.get", SnapshotGet())
            self.log.write("action", "snapshot.get", id=env.id, reason=why)
            self.client.resync_needed = False
            try:
                reply = await self.client.request(env, frozenset({"snapshot.state"}), self.timeout_s)
            except FrameRefused as err:
                why = f"resync again: {err.message}"
                continue
            break
        observe(reply, self.memory)
        self.log.stage = self.memory.working.stage
        return reply

    async def end(self, reason: str) -> Envelope:
        env = self._envelope("session.end", SessionEnd(reason=reason[:1000]))
        self.memory.working.phase = "TERMINATING"
        self.log.write("action", "session.end", id=env.id, reason=reason)
        return await self.client.request(env, frozenset({"session.ended"}), self.timeout_s)
