"""A local fake of the Slack Web API, for the real ``slack_sdk`` ``WebClient``.

It serves ``POST /api/conversations.list`` and ``POST /api/conversations.history`` with
form-encoded bodies (what ``WebClient`` sends), a bearer token in ``Authorization``, opaque
cursors in ``response_metadata.next_cursor``, and Slack's error style: HTTP 200 with
``{"ok": false, "error": "invalid_auth"}`` (or ``not_authed``, ``token_revoked``,
``channel_not_found``), and HTTP 429 ``ratelimited`` with ``Retry-After`` when scripted.
History is newest first, as Slack returns it. Every request is recorded (``requests``).

Example::

    with FakeSlack() as fake:
        fake.add_channel("C01", "general")
        fake.add_message("C01", ts="1700000000.000100", user="U1", text="hello")
        client = SlackClient(fake.token, base_url=fake.base_url)
        ...
        assert fake.requests[0].form["limit"] == "100"
"""

from __future__ import annotations

import base64
import itertools
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from devfakes.loopback import JsonHandler, LoopbackServer


@dataclass
class Received:
    """One request: ``method`` is the Slack method (``conversations.list``); ``form`` the decoded
    form body (one value per key); ``content_type`` as sent."""

    http_method: str
    method: str
    form: dict[str, str]
    headers: dict[str, str]
    content_type: str
    status: int = 0
    error: str | None = None


@dataclass
class Fail:
    """A scripted answer instead of the next request: HTTP ``status`` with ``{"ok": false, "error": ...}``."""

    error: str = "ratelimited"
    status: int = 429
    retry_after: str | None = "1"


@dataclass
class Channel:
    id: str
    name: str
    is_private: bool = False
    is_archived: bool = False
    is_member: bool = True
    topic: str = ""
    num_members: int = 3
    messages: list[dict[str, Any]] = field(default_factory=list)


def cursor_for(offset: int) -> str:
    """The opaque cursor the fake hands out for ``offset`` (tests assert it is sent back)."""
    return base64.b64encode(f"offset:{offset}".encode()).decode()


def _offset(cursor: str) -> int | None:
    try:
        kind, _, value = base64.b64decode(cursor.encode(), validate=True).decode().partition(":")
        return int(value) if kind == "offset" else None
    except (ValueError, UnicodeDecodeError):
        return None


class FakeSlack(LoopbackServer):
    """The fake server; ``start()``/``close()`` or a context manager. See the module doc."""

    def __init__(self, *, token: str = "xoxp-fake-slack-token", max_page_size: int = 1000) -> None:
        self.token = token
        self.max_page_size = max_page_size
        """Items per page at most, whatever ``limit`` asks (Slack may return fewer than ``limit``)."""
        self.revoked: set[str] = set()
        self.channels: dict[str, Channel] = {}
        self.requests: list[Received] = []
        self._failures: deque[Fail] = deque()
        self._ts = itertools.count(1)
        self._lock = threading.Lock()

    # lifecycle ---------------------------------------------------------------------------
    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_class(self)

    @property
    def base_url(self) -> str:
        """The Web API base (``http://127.0.0.1:PORT/api/``), as ``WebClient(base_url=...)`` wants it."""
        return self.root + "/api/"

    # scripting ---------------------------------------------------------------------------
    def add_channel(self, channel_id: str, name: str, **kwargs: Any) -> Channel:
        with self._lock:
            channel = self.channels[channel_id] = Channel(id=channel_id, name=name, **kwargs)
            return channel

    def add_message(self, channel_id: str, *, text: str, user: str = "U0001", ts: str | None = None,
                    **extra: Any) -> dict[str, Any]:
        """Append a message (give them oldest first; ``ts`` defaults to an increasing value)."""
        with self._lock:
            message = {"type": "message", "user": user, "text": text,
                       "ts": ts or f"{1700000000 + next(self._ts)}.000100", **extra}
            self.channels[channel_id].messages.append(message)
            return message

    def fail(self, *items: Fail) -> None:
        with self._lock:
            self._failures.extend(items)

    # the API (from handler threads) --------------------------------------------------------
    def _page(self, items: list[dict[str, Any]], form: dict[str, str], default: int) -> tuple[
            list[dict[str, Any]], str] | str:
        offset = 0
        if form.get("cursor"):
            found = _offset(form["cursor"])
            if found is None:
                return "invalid_cursor"
            offset = found
        limit = max(1, min(self.max_page_size, int(form.get("limit") or default)))
        page = items[offset:offset + limit]
        return page, cursor_for(offset + limit) if offset + limit < len(items) else ""

    def _list(self, form: dict[str, str]) -> dict[str, Any]:
        types = set((form.get("types") or "public_channel").split(","))
        exclude_archived = form.get("exclude_archived") in ("1", "true")
        rows = [
            {"id": c.id, "name": c.name, "is_channel": True, "is_private": c.is_private,
             "is_archived": c.is_archived, "is_member": c.is_member, "num_members": c.num_members,
             "topic": {"value": c.topic, "creator": "", "last_set": 0}}
            for c in self.channels.values()
            if ("private_channel" if c.is_private else "public_channel") in types
            and not (exclude_archived and c.is_archived)]
        paged = self._page(rows, form, 100)
        if isinstance(paged, str):
            return {"ok": False, "error": paged}
        page, cursor = paged
        return {"ok": True, "channels": page, "response_metadata": {"next_cursor": cursor}}

    def _history(self, form: dict[str, str]) -> dict[str, Any]:
        channel = self.channels.get(form.get("channel", ""))
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        oldest = float(form.get("oldest") or 0)
        rows = [m for m in reversed(channel.messages) if float(m["ts"]) > oldest]  # newest first
        paged = self._page(rows, form, 100)
        if isinstance(paged, str):
            return {"ok": False, "error": paged}
        page, cursor = paged
        return {"ok": True, "messages": page, "has_more": bool(cursor), "pin_count": 0,
                "response_metadata": {"next_cursor": cursor}}

    def dispatch(self, req: Received) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self.requests.append(req)
            if self._failures:
                fail = self._failures.popleft()
                headers = {"Retry-After": fail.retry_after} if fail.retry_after is not None else {}
                return fail.status, {"ok": False, "error": fail.error}, headers
            auth = req.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""
            if not token:
                return 200, {"ok": False, "error": "not_authed"}, {}
            if token in self.revoked:
                return 200, {"ok": False, "error": "token_revoked"}, {}
            if token != self.token:
                return 200, {"ok": False, "error": "invalid_auth"}, {}
            if req.method == "conversations.list":
                return 200, self._list(req.form), {}
            if req.method == "conversations.history":
                return 200, self._history(req.form), {}
            return 200, {"ok": False, "error": "unknown_method"}, {}


def _handler_class(fake: FakeSlack) -> type[BaseHTTPRequestHandler]:
    class _Handler(JsonHandler):
        def serve(self) -> None:
            raw = self.body()
            url = urlsplit(self.path)
            content_type = self.headers.get("Content-Type", "")
            form = {k: v[0] for k, v in parse_qs(url.query).items()}
            if content_type.startswith("application/x-www-form-urlencoded"):
                form.update({k: v[0] for k, v in parse_qs(raw.decode()).items()})
            req = Received(http_method=self.command, method=url.path.removeprefix("/api/"), form=form,
                           headers=self.lower_headers(), content_type=content_type)
            headers: dict[str, str]
            if not url.path.startswith("/api/"):
                status, payload, headers = 404, {"ok": False, "error": "not_found"}, {}
            else:
                status, payload, headers = fake.dispatch(req)
            req.status, req.error = status, None if payload.get("ok") else str(payload.get("error"))
            self.answer(status, payload, headers)

    return _Handler
