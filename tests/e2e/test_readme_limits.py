"""Issue 31: the README's limits table says what the code does (each row's value is the default of
its setting, or the constant behind it)."""

from __future__ import annotations

from pathlib import Path

from shared.api import MAX_ATTACHED_CONTEXT, MAX_CONVERSATION_AT_ROUTE, MAX_CONVERSATION_FOR_MODEL, MAX_PROMPT_CHARS
from shared.config import Settings
from shared.connectors.user_mcp import MAX_TOKEN_CHARS
from shared.web import MAX_JSON_DEPTH

README = Path(__file__).resolve().parents[2] / "README.md"


def rows() -> dict[str, str]:
    text = README.read_text()
    table = text.split("| limit | value | setting | beyond it |", 1)[1].split("\n\n", 1)[0]
    out: dict[str, str] = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out[cells[0]] = f"{cells[1]} | {cells[2]}"
    return out


def test_the_limits_table_matches_the_defaults() -> None:
    s = Settings()
    table = rows()

    def row(start: str) -> str:
        (found,) = [v for k, v in table.items() if k.startswith(start)]
        return found

    assert row("prompt").startswith(f"{MAX_PROMPT_CHARS:,} characters")
    assert row("request body").startswith(f"{s.max_body_bytes:,} bytes | `MAX_BODY_BYTES`")
    assert row("JSON nesting").startswith(f"{MAX_JSON_DEPTH} levels")
    assert row("`conversation`").startswith(f"last {MAX_CONVERSATION_AT_ROUTE} kept (the model sees "
                                             f"{MAX_CONVERSATION_FOR_MODEL}) / first {MAX_ATTACHED_CONTEXT} kept")
    assert row("tool calls per user turn").startswith(f"{s.max_tool_calls_per_turn} |")
    assert row("model calls (steps)").startswith(f"{s.max_loop_steps} (1\u201315) | `AGENT_MAX_LOOP_STEPS`")
    assert row("wall-clock per invocation").startswith(f"{s.run_deadline_s:.0f} s | `AGENT_RUN_DEADLINE_S`")
    assert row("one model call").startswith(f"{s.model_timeout_s:.0f} s per attempt, {s.model_max_retries} retries")
    assert row("a plan session's deadline").startswith(
        f"{s.plan_default_deadline_s / 3600:.0f} h by default, {s.plan_max_deadline_s / 86400:.0f} days at most")
    assert row("tasks per plan").startswith(f"{s.plan_max_tasks} / {s.plan_max_acts_per_task} |")
    assert row("model calls per plan invocation").startswith(f"{s.plan_steps_per_invocation} |")
    assert row("approval lifetime").startswith(f"{s.approval_ttl_s / 3600:.0f} h | `APPROVAL_TTL_S`")
    assert row("an MCP server's tool listing").startswith(f"{s.mcp_timeout_s:.0f} s | `MCP_TIMEOUT_S`")
    assert row("an MCP server's token").startswith(f"printable ASCII, at most {MAX_TOKEN_CHARS:,} characters")
