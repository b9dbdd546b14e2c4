"""Pieces of the reliability scenario: counting non-idempotent tools, the scripted model, a
dispatcher that plays Pub/Sub's part, and crash injection.

Tools: ``send_note`` (side effect, no recipients: always needs approval below ``autonomous``) and
``notify`` (mail-like: its recipient is checked against the ``delegated`` allowlist, so a call to
an allowlisted address runs without approval) cannot tell what happened after a crash (their
outcome is then ``unknown``). Two more can, as the shipped connectors do: ``file_note`` declares a
reconciliation (the service is asked whether the action's note exists, as Gmail is asked for a
``Message-ID``) and ``book_slot`` an idempotency key (the service recognises a repeat of the
action's booking, as Calendar does its event id). All count their real executions per action id
in one ledger and honour an armed ``tool`` crash plan.

Two more are the tools of a real MCP server (tests/agent/mcp_servers/ledger_server.py, stdio,
through the MCP adapter as in production): ``ledger_append_note`` (no annotations: a side effect,
not idempotent; a call cut off by a crash ends ``unknown``) and ``ledger_put_note``
(``idempotentHint``: recovery runs a cut-off call again, the server keeps its note once). The
server counts their executions itself (one line per call in its ledger file); an armed ``tool``
crash fires just before the call goes to the server or just after its answer came back.

A crash is a ``Crash`` (a BaseException, so nothing in the runtime catches it, as when a process
dies). It is armed per thread, so only the chosen delivery of the chosen run crashes:
- at a commit: before the store applies it, or after it was applied (``InstrumentedStore`` hooks);
- inside the tool: before or after the side effect happened.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import sys
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from bench.instrument import InstrumentedStore
from bench.invariants import mcp_key
from shared.config import McpServer, Settings
from shared.durable.messages import WorkMessage
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import call, calls_turn, text_turn
from shared.state.docstore import DocStore
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.mcp_tools import McpTool, server_tools
from shared.tools.registry import ToolRegistry

Scenario = Literal["single", "parallel", "chain", "mixed", "reconciled", "keyed", "mcp", "mcp_keyed"]
SCENARIOS: tuple[Scenario, ...] = ("single", "parallel", "chain", "mixed", "reconciled", "keyed", "mcp", "mcp_keyed")
MCP_SCENARIOS = ("mcp", "mcp_keyed")
MCP_SERVER = "ledger"
LEDGER_SERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "tests", "agent", "mcp_servers", "ledger_server.py")
SCENARIO_MARK = "scenario="
ALLOWLISTED = "bob@example.com"
"""The address the scenario user's allowlist holds (``notify`` to it runs without approval)."""


class Crash(BaseException):
    """The process died here."""


@dataclass(frozen=True)
class CrashPlan:
    """``where``: ``commit`` (``index``: the k-th commit of the delivery, 1-based) or ``tool``;
    ``when``: ``before`` or ``after`` the commit / the side effect."""

    where: Literal["commit", "tool"]
    when: Literal["before", "after"]
    index: int = 0

    @property
    def label(self) -> str:
        return f"{self.where}{self.index if self.where == 'commit' else ''}:{self.when}"


class _Armed(threading.local):
    def __init__(self) -> None:
        self.plan: CrashPlan | None = None
        self.base = 0
        self.fired: str | None = None


class Chaos:
    """Crash injection and the side-effect ledger, shared by every thread of the scenario."""

    def __init__(self, inner: DocStore, mcp_ledger: str | None = None) -> None:
        self._armed = _Armed()
        self.mcp_ledger = mcp_ledger
        """The ledger file of the MCP server (None: no MCP tools in the registry)."""
        self.store = InstrumentedStore(inner, before_commit=self._before, after_commit=self._after)
        self.executions: Counter[str] = Counter()
        """Real executions of ``send_note`` / ``notify`` per action id (the side effect we must never
        repeat)."""
        self._lock = threading.Lock()

    # ---- arming (per thread) ------------------------------------------------------------------
    def arm(self, plan: CrashPlan | None) -> None:
        self._armed.plan = plan
        self._armed.base = int(self.store.snapshot()["commits"])
        self._armed.fired = None

    def disarm(self) -> str | None:
        fired, self._armed.plan, self._armed.fired = self._armed.fired, None, None
        return fired

    def _fire(self, label: str) -> None:
        self._armed.plan = None
        self._armed.fired = label
        raise Crash(label)

    def _hit(self, when: str, index: int) -> None:
        plan = self._armed.plan
        if plan is not None and plan.where == "commit" and plan.when == when and index - self._armed.base == plan.index:
            self._fire(plan.label)

    def _before(self, kind: str, index: int) -> None:
        self._hit("before", index)

    def _after(self, kind: str, index: int) -> None:
        self._hit("after", index)

    # ---- the tools ----------------------------------------------------------------------------
    def tool_point(self, when: str) -> None:
        """Fire an armed ``tool`` crash planned for ``when`` (``before`` / ``after`` the side effect)."""
        plan = self._armed.plan
        if plan is not None and plan.where == "tool" and plan.when == when:
            self._fire(plan.label)

    def _side_effect(self, action_id: str) -> None:
        """The real side effect, bracketed by the armed ``tool`` crash points."""
        self.tool_point("before")
        with self._lock:
            self.executions[action_id] += 1
        self.tool_point("after")

    def mcp_server(self) -> McpServer:
        assert self.mcp_ledger is not None
        return McpServer(name=MCP_SERVER, command=(sys.executable, LEDGER_SERVER, self.mcp_ledger))

    def mcp_ledger_lines(self) -> list[dict[str, Any]]:
        """Every call the MCP server received (repeats of an idempotent one included)."""
        if self.mcp_ledger is None or not os.path.exists(self.mcp_ledger):
            return []
        with open(self.mcp_ledger) as f:
            fcntl.flock(f, fcntl.LOCK_SH)  # the server appends under an exclusive lock
            return [json.loads(raw) for raw in f if raw.strip()]

    def mcp_effects(self) -> Counter[str]:
        """Calls that took effect on the MCP server, by ``tool|args`` (``bench.invariants.mcp_key``)."""
        out: Counter[str] = Counter()
        for line in self.mcp_ledger_lines():
            out[mcp_key(line["tool"], line["args"])] += 1 if line["effect"] else 0
        return out

    def registry(self, settings: Settings | None = None) -> ToolRegistry:
        reg = default_registry()
        if self.mcp_ledger is not None:
            for tool in server_tools(self.mcp_server(), settings or Settings()):
                reg.add(ChaosMcpTool(**{f.name: getattr(tool, f.name) for f in dataclasses.fields(tool)},
                                      chaos=self))

        @reg.tool(side_effect=True)
        def send_note(ctx: ToolContext, to: str, body: str) -> dict[str, Any]:
            """Send a note to someone (not idempotent: each call sends one more note).

            Args:
                to: Recipient.
                body: Text.
            """
            self._side_effect(ctx.action_id)
            return {"sent": True, "to": to}

        def filed(ctx: ToolContext, args: BaseModel) -> dict[str, Any] | None:
            with self._lock:
                done = self.executions[ctx.action_id] > 0
            return {"filed": True, "note": ctx.action_id} if done else None

        @reg.tool(side_effect=True, reconcile=filed)
        def file_note(ctx: ToolContext, to: str, body: str) -> dict[str, Any]:
            """File a note for someone (the service can be asked whether this call's note exists).

            Args:
                to: Recipient.
                body: Text.
            """
            self._side_effect(ctx.action_id)
            return {"filed": True, "note": ctx.action_id}

        @reg.tool(side_effect=True, idempotent=True)
        def book_slot(ctx: ToolContext, to: str, body: str) -> dict[str, Any]:
            """Book a slot with someone (keyed by the call: the service recognises a repeat).

            Args:
                to: Who to meet.
                body: Topic.
            """
            with self._lock:
                repeat = self.executions[ctx.action_id] > 0
            if not repeat:
                self._side_effect(ctx.action_id)
            return {"booked": True, "slot": ctx.action_id}

        @reg.tool(side_effect=True, recipients=_notify_recipients)
        def notify(ctx: ToolContext, to: str, body: str) -> dict[str, Any]:
            """Mail someone a notification (not idempotent: each call sends one more mail).

            Args:
                to: Recipient's email address.
                body: Text.
            """
            self._side_effect(ctx.action_id)
            return {"notified": True, "to": to}

        return reg


@dataclasses.dataclass(frozen=True)
class ChaosMcpTool(McpTool):
    """An MCP server's tool with the armed ``tool`` crash points around its call."""

    chaos: Chaos | None = None

    def run(self, ctx: ToolContext, args: BaseModel) -> dict[str, Any]:
        assert self.chaos is not None
        self.chaos.tool_point("before")
        out = super().run(ctx, args)
        self.chaos.tool_point("after")
        return out


def _notify_recipients(args: BaseModel) -> list[str]:
    return [str(args.model_dump()["to"])]


def scenario_model(request: ModelRequest) -> Turn:
    """The model: the prompt names the scenario and a tag; the number of model turns so far picks
    the next answer."""
    prompt = request.turns[0].text if request.turns else ""
    scenario, tag = prompt.split(SCENARIO_MARK, 1)[1].split()[:2]
    done = sum(1 for t in request.turns if t.role == "model")
    if scenario == "mixed" and done == 0:  # an allowed side effect and one needing approval
        return calls_turn(call("notify", {"to": ALLOWLISTED, "body": tag}),
                          call("send_note", {"to": "carol", "body": tag}))
    if scenario == "parallel" and done == 0:
        return calls_turn(call("search_memory", {"query": tag}), call("send_note", {"to": "bob", "body": tag}),
                          call("send_note", {"to": "carol", "body": tag}))
    if scenario in MCP_SCENARIOS and done == 0:
        return calls_turn(call(f"{MCP_SERVER}_{'put_note' if scenario == 'mcp_keyed' else 'append_note'}",
                               {"to": "erin", "body": tag}))
    if scenario in ("reconciled", "keyed") and done == 0:
        return calls_turn(call("file_note" if scenario == "reconciled" else "book_slot", {"to": "dan", "body": tag}))
    if done == 0 or (scenario == "chain" and done == 1):
        return calls_turn(call("send_note", {"to": f"bob{done}", "body": tag}))
    return text_turn(f"Handled {tag}.")


class RoutedDispatcher:
    """Plays Pub/Sub: keeps published resume messages per run until the scenario delivers them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: defaultdict[str, list[WorkMessage]] = defaultdict(list)
        self.published = 0

    def publish(self, message: WorkMessage) -> None:
        with self._lock:
            self._by_run[message.unitId or ""].append(message)
            self.published += 1

    def take(self, run_id: str) -> list[WorkMessage]:
        with self._lock:
            return self._by_run.pop(run_id, [])

    def take_all(self) -> list[WorkMessage]:
        with self._lock:
            out = [m for messages in self._by_run.values() for m in messages]
            self._by_run.clear()
            return out
