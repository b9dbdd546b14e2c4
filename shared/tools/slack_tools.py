"""The Slack tools, both read-only: ``slack_channels`` and ``slack_read``.

Reads paginate with cursors up to a bound; long lists and messages are trimmed with a note.
Author ids (``U...``) are kept as Slack gives them. The Slack adapter (and ``slack_sdk``) is
imported only when one of these tools runs.
"""

from __future__ import annotations

import contextlib
import functools
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from shared.connectors import require_connectors
from shared.errors import ToolError
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from shared.connectors.slack import SlackClient, SlackMessage

SLACK_TIMEOUT_S = 30.0
"""Socket timeout of a Slack request (and the longest ``Retry-After`` wait), lowered to the time left."""
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{6,}$")
_SLACK_TS = re.compile(r"^\d{9,11}(\.\d{1,6})?$")


class SlackTime(str):
    """A point in time, as a Slack timestamp (``1700000000.000100``) or an ISO 8601 date-time
    (UTC unless it has an offset); validated to a Slack timestamp string."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def check(value: str) -> str:
            text = value.strip()
            if _SLACK_TS.match(text):
                return text
            try:
                parsed = datetime.fromisoformat(text)
            except ValueError:
                raise ValueError(f"{value!r} is neither a Slack timestamp nor an ISO 8601 date-time") from None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return f"{parsed.timestamp():.6f}"
        return core_schema.no_info_after_validator_function(check, core_schema.str_schema())


def _client(ctx: ToolContext) -> SlackClient:
    return require_connectors(ctx.connectors).slack(ctx.uid, timeout_s=ctx.call_budget("Slack", SLACK_TIMEOUT_S))


def _message_out(m: SlackMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"ts": m.ts, "user": m.user or m.bot_id, "text": m.text}
    with contextlib.suppress(ValueError):  # a malformed ts: keep the message, without a readable time
        out["time"] = datetime.fromtimestamp(float(m.ts), UTC).isoformat(timespec="seconds")
    if m.thread_ts and m.thread_ts != m.ts:
        out["threadTs"] = m.thread_ts
    if m.reply_count:
        out["replyCount"] = m.reply_count
    if m.subtype:
        out["subtype"] = m.subtype
    if m.truncated:
        out["truncated"] = True
    return out


def register(registry: ToolRegistry) -> None:
    tool = functools.partial(registry.tool, connector="slack")  # every tool here acts through it

    @tool(side_effect=False)
    def slack_channels(ctx: ToolContext, limit: int = 100, include_private: bool = True) -> dict[str, Any]:
        """List the user's Slack channels (id, name, topic, membership).

        Args:
            limit: Maximum number of channels (1-200).
            include_private: Include private channels the user belongs to.
        """
        found = _client(ctx).channels(limit=limit, include_private=include_private)
        out: dict[str, Any] = {
            "channels": [{"id": c.id, "name": c.name, "private": c.is_private, "member": c.is_member,
                          **({"topic": c.topic} if c.topic else {})} for c in found.channels],
            "count": len(found.channels)}
        if found.more:
            out["note"] = f"the workspace has more channels; only the first {len(found.channels)} are listed"
        return out

    @tool(side_effect=False)
    def slack_read(ctx: ToolContext, channel: str, limit: int = 20, oldest: SlackTime | None = None
                   ) -> dict[str, Any]:
        """Read the latest messages of a Slack channel, oldest first.

        Args:
            channel: Channel id (C0123ABCD) or name (#general).
            limit: Maximum number of messages, the most recent ones (1-100).
            oldest: Only messages after this time: ISO 8601 date-time (UTC unless an offset is given)
                or a Slack timestamp.
        """
        name = channel.strip()
        if not name:
            raise ToolError("channel must not be empty")
        client = _client(ctx)
        channel_id = name if _CHANNEL_ID.match(name) else client.find_channel(name).id
        page = client.history(channel_id, limit=limit, oldest=oldest)
        out: dict[str, Any] = {"channel": channel_id, "messages": [_message_out(m) for m in page.messages],
                               "count": len(page.messages)}
        notes = []
        if page.more:
            notes.append(f"older messages exist; only the latest {len(page.messages)} are shown")
        if any(m.truncated for m in page.messages):
            notes.append("long messages were trimmed")
        if notes:
            out["note"] = "; ".join(notes)
        return out
