"""``host-agent``: run one session of the host agent against a host.

    host-agent --url ws://HOST:PORT/PATH --room ROOM --goal "TEXT" --log FILE.jsonl
               [--planner rules|llm] [--contact "Name <email>"] [--timeout-s N] [--max-session-s N]
               [--question-timeout-s N] [--max-frame-bytes N] [--quiet]
    host-agent conform --url ws://HOST:PORT/PATH --room ROOM [--timeout-s N] [--json]

Prints the conversation and the stages to stdout as the session goes (unless ``--quiet``), writes
the JSONL log to ``--log``, and exits 0 when the session ended normally (goal reached, the user was
told why not, or the user called the booking off), 3 on a protocol failure, 4 on a connection
failure, 5 on a timeout, 6 when the user did not answer a question in time, 1 on an internal error,
2 on bad usage. ``--planner llm`` uses Gemini through ``shared.models`` (needs
``GEMINI_API_KEY`` or ``GEMINI_USE_VERTEX=true``; ``GEMINI_MODEL``, ``MODEL_TIMEOUT_S`` apply).
``--contact "Name <email>"`` says whom the booking is for, so the agent need not ask.
Diagnostics go to stderr as Cloud Logging JSON lines (``LOG_LEVEL``, default WARNING).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO
from urllib.parse import urlsplit

from hostagent.agent import AgentConfig, HostAgent, SessionResult
from hostagent.planner import Planner
from hostagent.rules_planner import RulesPlanner
from hostagent.session_log import LogRecord, SessionLog
from hostagent.understanding import Contact
from shared.config import Settings
from shared.errors import ConfigurationError
from shared.logs import configure_logging, log_context

if TYPE_CHECKING:
    from shared.models.base import Model
    from shared.state.docstore import DocStore

log = logging.getLogger("agent_runtime.hostagent")
USAGE_ERROR = 2
DEFAULT_MAX_SESSION_S = 600.0


def _url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected ws://HOST:PORT/PATH or wss://..., got {value!r}")
    return value


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return number


def _text(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def _contact(value: str) -> Contact:
    try:
        return Contact.parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="host-agent", description="Drive a host app over the host protocol (mvp-0.2).")
    p.add_argument("--url", required=True, type=_url, help="the relay or host: ws://HOST:PORT/PATH")
    p.add_argument("--room", required=True, type=_text, help="the room to join")
    p.add_argument("--goal", required=True, type=_text, help="what the user wants, in their words")
    p.add_argument("--log", required=True, type=_text, help="JSONL log file to write (replaced)")
    p.add_argument("--planner", choices=("rules", "llm"), default="rules")
    p.add_argument("--contact", type=_contact, default=None, metavar='"NAME <EMAIL>"',
                   help="who the booking is for, so the agent need not ask (the goal and the user's messages "
                        "still win over it)")
    p.add_argument("--uid", default="backend:host-agent",
                   help="whose usage ledger records the LLM planner's model calls (default backend:host-agent)")
    p.add_argument("--timeout-s", type=_positive, default=10.0,
                   help="bound of every wait for a reply or a state update (default 10)")
    p.add_argument("--max-session-s", "--session-timeout-s", dest="max_session_s", type=_positive,
                   default=DEFAULT_MAX_SESSION_S,
                   help=f"hard bound of the whole session, closing included (default {DEFAULT_MAX_SESSION_S:g})")
    p.add_argument("--question-timeout-s", type=_positive, default=None,
                   help="how long a question waits for the user's answer before the agent gives up (exit 6); "
                        "default 6 x --timeout-s, never more than --max-session-s")
    p.add_argument("--max-frame-bytes", type=int, default=1024 * 1024, help="largest frame accepted (1 MiB)")
    p.add_argument("--quiet", action="store_true", help="do not print the conversation")
    return p


def build_planner(kind: str, *, uid: str = "backend:host-agent", unit_id: str = "host-session",
                  store: DocStore | None = None) -> Planner:
    """The planner of ``kind``; the LLM planner's calls go to ``uid``'s usage ledger in ``store``
    (default: the configured one) and, for a user's uid while the deployment has money caps, are
    first reserved against that user's caps (docs/budgets.md; reached: the session stops ``blocked``
    with ``BUDGET_EXCEEDED`` before the call). The default ``backend:…`` owner is no user's: not capped."""
    if kind == "rules":
        return RulesPlanner()
    from hostagent.llm_planner import build_llm_planner
    from shared.models.factory import create_model
    from shared.state.factory import create_docstore
    from shared.state.usage_repo import UsageRepo
    from shared.usage.meter import MeteredCall, MeteredModel

    settings = Settings.from_env()
    if not (settings.gemini_api_key or settings.gemini_use_vertex):
        raise ConfigurationError("--planner llm needs GEMINI_API_KEY (or GEMINI_USE_VERTEX=true)")
    # Every planner call goes to the usage ledger of the configured store (STATE_BACKEND).
    docstore = store if store is not None else create_docstore(settings)
    ledger = UsageRepo(docstore)
    call = MeteredCall(uid=uid, unit_kind="host_session", unit_id=unit_id, component="host_planner",
                       operation_type="host_planner")
    model: Model = MeteredModel(create_model(settings), call, settings, ledger.record)
    if ":" not in uid and (settings.budget_user_daily_usd or settings.budget_user_monthly_usd):
        from shared.ids import new_id
        from shared.state.budget_repo import BudgetRepo
        from shared.usage.budget import CappedModel

        model = CappedModel(model, BudgetRepo(docstore), settings, uid, new_id)
    return build_llm_planner(model, timeout_s=settings.model_timeout_s)


class Transcript:
    """Human-readable lines for the log records: the conversation, the stages, the calls."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.stage: str | None = None

    def __call__(self, record: LogRecord) -> None:
        line = self._line(record)
        if line:
            print(line, file=self.out, flush=True)

    def _line(self, r: LogRecord) -> str | None:
        env = (r.data or {}).get("envelope") or {}
        payload = env.get("payload") or {}
        if r.kind == "session" and r.type == "session.begin":
            return f"goal: {(r.data or {}).get('goal')}"
        if r.kind == "session":
            return f"session finished: {r.outcome} ({r.reason})"
        if r.kind == "envelope":
            if r.type == "session.started":
                return f"session {payload.get('sessionId')} started"
            if r.type in ("snapshot.state", "state.updated") and payload.get("stage") != self.stage:
                self.stage = payload.get("stage")
                tools = ", ".join(t["name"] for t in payload.get("toolSchema", [])) or "none"
                return f"[stage {self.stage}] tools: {tools}"
            if r.type == "user.message":
                return f"user: {payload.get('text')}"
            if r.type == "agent.message":
                kind = payload.get("kind")
                return f"agent{f' ({kind})' if kind and kind != 'info' else ''}: {payload.get('text')}"
            if r.type == "tool.call":
                params = json.dumps(payload.get("params"))
                return f"  -> {payload.get('name')} {params}  because: {payload.get('reason')}"
            if r.type == "tool.result":
                return f"  <- ok {payload.get('name')}"
            if r.type == "error":
                return f"  <- error {payload.get('code')}: {payload.get('message')}"
            if r.type == "session.ended":
                return f"host: session ended ({payload.get('summary')})"
            return None
        if r.kind in ("recovery", "error") or (r.kind == "verification" and r.outcome in ("stale", "desync")):
            return f"  !! {r.kind} {r.type}{f' [{r.code}]' if r.code else ''}: {r.reason}"
        return None


async def run_session(config: AgentConfig, planner: Planner, log_path: str,
                      listener: Callable[[LogRecord], None] | None = None) -> SessionResult:
    session_log = SessionLog(log_path, listener=listener)
    return await HostAgent(config, planner, session_log).run()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["conform"]:
        from hostagent.conform import main as conform_main

        return conform_main(argv[1:])
    args = parser().parse_args(argv)
    configure_logging(os.environ.get("GOOGLE_CLOUD_PROJECT", ""), os.environ.get("LOG_LEVEL", "WARNING").upper(),
                      stream=sys.stderr)
    try:
        planner = build_planner(args.planner, uid=args.uid, unit_id=f"{args.room}-{uuid.uuid4().hex[:8]}")
    except ConfigurationError as exc:
        print(f"host-agent: {exc}", file=sys.stderr)
        return USAGE_ERROR
    config = AgentConfig(url=args.url, room=args.room, goal=args.goal, timeout_s=args.timeout_s,
                         session_timeout_s=args.max_session_s,
                         question_timeout_s=min(args.question_timeout_s or 6 * args.timeout_s, args.max_session_s),
                         connect_timeout_s=args.timeout_s, max_frame_bytes=args.max_frame_bytes, contact=args.contact)
    try:
        listener = None if args.quiet else Transcript(sys.stdout)
        result = asyncio.run(run_session(config, planner, args.log, listener))
    except OSError as exc:  # the log file cannot be written
        print(f"host-agent: cannot write the log {args.log}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
    with log_context(sessionId=result.sessionId, room=args.room, planner=args.planner):
        level = logging.INFO if result.exit_code == 0 else logging.ERROR
        log.log(level, "host agent session finished", extra={"fields": {
            "outcome": result.outcome, "code": result.code, "exitCode": result.exit_code,
            "toolCalls": result.toolCalls, "stage": result.stage}})
    return result.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
