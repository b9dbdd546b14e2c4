"""Slack Web API adapter: the only module that imports ``slack_sdk``.

Reads paginate with cursors and stop at a bound; long texts and lists are trimmed with a note.
Slack errors become ours: ``not_authed``/``invalid_auth``/``token_revoked`` → ``ConnectorError``
(the user must reconnect Slack), ``channel_not_found`` → a clear ``ToolError``, ``ratelimited``
(HTTP 429) → retried after ``Retry-After`` (a wait above the cap fails at once; without the header,
exponential backoff 1 s, 2 s, …), at most 3 attempts, then a clear ``ToolError``.

```python
client = SlackClient(token)                   # a user (xoxp-) or bot (xoxb-) token
channels = client.channels(limit=100)
page = client.history("C0123456", limit=20, oldest="1700000000.000000")
```
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from shared.connectors.credentials import ConnectorError
from shared.errors import ToolError

DEFAULT_BASE_URL = "https://slack.com/api/"
MAX_CHANNELS = 200
MAX_MESSAGES = 100
MAX_MESSAGE_CHARS = 1500
_PAGE_SIZE = 200  # Slack recommends at most 200 per page for conversations.list
_AUTH_ERRORS = frozenset({"not_authed", "invalid_auth", "token_revoked", "token_expired", "account_inactive"})


class SlackChannel(BaseModel):
    id: str
    name: str
    is_private: bool = False
    is_member: bool = False
    topic: str = ""
    num_members: int | None = None


class SlackMessage(BaseModel):
    """One message; ``user`` is the author's user id (``U...``), kept as Slack gives it."""

    ts: str
    user: str | None = None
    bot_id: str | None = None
    text: str = ""
    thread_ts: str | None = None
    reply_count: int | None = None
    subtype: str | None = None
    truncated: bool = False


class ChannelList(BaseModel):
    channels: list[SlackChannel]
    more: bool = False
    """True when Slack had more channels than the bound allowed."""


class MessagePage(BaseModel):
    messages: list[SlackMessage]
    """Oldest first (Slack returns newest first; the newest ``limit`` messages are kept)."""
    more: bool = False
    """True when older messages (after ``oldest``) exist beyond the bound."""


class SlackClient:
    """The Slack Web API for one token.

    Args:
        token: The user's Slack token.
        base_url: Web API base (default ``https://slack.com/api/``; a local fake in tests).
        max_attempts: Attempts per call when rate limited.
        max_retry_after_s: Cap on a single ``Retry-After`` wait; a longer one fails at once.
        first_backoff_s: The wait after a 429 without ``Retry-After``; it doubles on each further
            attempt (capped at ``max_retry_after_s``).
        sleep: Waits between attempts (tests pass a recorder instead of sleeping).
        timeout_s: Socket timeout per request.
        page_size: Items asked for per page (at most 200, Slack's recommendation).
    """

    def __init__(self, token: str, *, base_url: str | None = None, max_attempts: int = 3,
                 max_retry_after_s: float = 30.0, first_backoff_s: float = 1.0,
                 sleep: Callable[[float], None] = time.sleep, timeout_s: int = 30,
                 page_size: int = _PAGE_SIZE) -> None:
        self._client = WebClient(token=token, base_url=base_url or DEFAULT_BASE_URL, timeout=timeout_s)
        self._max_attempts = max_attempts
        self._max_retry_after_s = max_retry_after_s
        self._first_backoff_s = first_backoff_s
        self._sleep = sleep
        self._page_size = max(1, min(_PAGE_SIZE, page_size))

    def _call(self, method: str, params: dict[str, Any], *, channel: str | None = None) -> dict[str, Any]:
        for attempt in range(1, self._max_attempts + 1):
            try:
                response = self._client.api_call(method, params=params)
                return dict(response.data) if isinstance(response.data, dict) else {}
            except SlackApiError as exc:
                error = str(exc.response.get("error") or "unknown_error")
                if exc.response.status_code == 429 or error == "ratelimited":
                    wait = _retry_after(exc.response.headers)
                    if wait is None:  # no (usable) Retry-After: exponential backoff
                        wait = min(self._first_backoff_s * 2 ** (attempt - 1), self._max_retry_after_s)
                    if attempt < self._max_attempts and wait <= self._max_retry_after_s:
                        self._sleep(wait)
                        continue
                    raise ToolError("Slack is rate limiting requests; try again in a minute") from None
                raise _mapped(error, method, channel, exc.response.get("needed")) from None
            except SlackClientError as exc:
                raise ToolError(f"Slack could not be reached ({type(exc).__name__})") from None
            except OSError as exc:  # urllib: connection refused, timeout, DNS
                raise ToolError(f"Slack could not be reached ({type(exc).__name__})") from None
        raise AssertionError("unreachable")

    def _pages(self, method: str, params: dict[str, Any], *, channel: str | None = None
               ) -> Iterator[tuple[dict[str, Any], bool]]:
        """Each page with whether another follows (cursor pagination)."""
        cursor = ""
        while True:
            body = self._call(method, {**params, **({"cursor": cursor} if cursor else {})}, channel=channel)
            cursor = str((body.get("response_metadata") or {}).get("next_cursor") or "")
            yield body, bool(cursor)
            if not cursor:
                return

    def channels(self, *, limit: int = 100, include_private: bool = True,
                 include_archived: bool = False) -> ChannelList:
        """Channels the token can see, at most ``limit`` (1..200)."""
        bound = max(1, min(MAX_CHANNELS, limit))
        params: dict[str, Any] = {"types": "public_channel,private_channel" if include_private
                                  else "public_channel", "exclude_archived": not include_archived}
        found: list[SlackChannel] = []
        more = False
        for body, has_next in self._pages("conversations.list", {**params, "limit": min(self._page_size, bound)}):
            for raw in body.get("channels") or []:
                if len(found) == bound:
                    more = True
                    break
                found.append(SlackChannel(
                    id=str(raw.get("id", "")), name=str(raw.get("name", "")),
                    is_private=bool(raw.get("is_private")), is_member=bool(raw.get("is_member")),
                    topic=_trim(str((raw.get("topic") or {}).get("value") or ""), 200)[0],
                    num_members=raw.get("num_members")))
            if len(found) == bound:
                more = more or has_next
                break
        return ChannelList(channels=found, more=more)

    def find_channel(self, name: str) -> SlackChannel:
        """The channel called ``name`` (with or without ``#``), searched across every page."""
        wanted = name.lstrip("#").lower()
        for body, _ in self._pages("conversations.list", {"types": "public_channel,private_channel",
                                                          "exclude_archived": True, "limit": self._page_size}):
            for raw in body.get("channels") or []:
                if str(raw.get("name", "")).lower() == wanted:
                    return SlackChannel(id=str(raw["id"]), name=str(raw["name"]),
                                        is_private=bool(raw.get("is_private")), is_member=bool(raw.get("is_member")))
        raise ToolError(f"Slack channel #{wanted} was not found (or is not visible to this account)")

    def history(self, channel: str, *, limit: int = 20, oldest: str | None = None) -> MessagePage:
        """The newest ``limit`` (1..100) messages of ``channel`` (an id) after ``oldest`` (a Slack ts)."""
        bound = max(1, min(MAX_MESSAGES, limit))
        params: dict[str, Any] = {"channel": channel, "limit": min(self._page_size, bound)}
        if oldest:
            params["oldest"] = oldest
        found: list[SlackMessage] = []
        more = False
        for body, has_next in self._pages("conversations.history", params, channel=channel):
            for raw in body.get("messages") or []:
                if len(found) == bound:
                    more = True
                    break
                text, cut = _trim(str(raw.get("text") or ""), MAX_MESSAGE_CHARS)
                found.append(SlackMessage(
                    ts=str(raw.get("ts", "")), user=raw.get("user"), bot_id=raw.get("bot_id"), text=text,
                    thread_ts=raw.get("thread_ts"), reply_count=raw.get("reply_count"),
                    subtype=raw.get("subtype"), truncated=cut))
            if len(found) == bound:
                more = more or has_next or bool(body.get("has_more"))
                break
        found.reverse()
        return MessagePage(messages=found, more=more)


def _trim(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"… [trimmed: {len(text)} characters in all]", True


def _retry_after(headers: Any) -> float | None:
    """Seconds of the ``Retry-After`` header; ``None`` when absent or not a number."""
    raw = None
    if isinstance(headers, dict):
        raw = headers.get("Retry-After") or headers.get("retry-after")
    if isinstance(raw, list):
        raw = raw[0] if raw else None
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None


def _mapped(error: str, method: str, channel: str | None, needed: Any) -> ToolError:
    if error in _AUTH_ERRORS:
        reason = "revoked" if error in ("token_revoked", "account_inactive") else "unauthorized"
        return ConnectorError(f"Slack access is no longer valid ({error}); ask the user to reconnect Slack",
                              provider="slack", reason=reason)
    if error == "channel_not_found":
        return ToolError(f"Slack channel {channel!r} was not found (or is not visible to this account)")
    if error == "not_in_channel":
        return ToolError(f"this Slack account is not a member of channel {channel!r}")
    if error == "missing_scope":
        return ToolError(f"the Slack connection lacks a permission ({needed or 'scope'}); reconnect Slack")
    return ToolError(f"Slack {method} failed: {error}")


