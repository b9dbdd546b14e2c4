"""A local fake of the Gmail v1 REST API and Google's OAuth token endpoint.

It serves the paths ``google-api-python-client`` builds from the static Gmail discovery document
when its endpoint is overridden to ``fake.base_url``, and the token endpoint google-auth calls to
refresh (``fake.token_uri``):

- ``GET  /gmail/v1/users/me/messages`` (messages.list: q, maxResults, pageToken)
- ``GET  /gmail/v1/users/me/messages/{id}`` (messages.get: format=full|metadata, metadataHeaders)
- ``GET  /gmail/v1/users/me/threads/{id}`` (threads.get: format=full|metadata, metadataHeaders)
- ``POST /gmail/v1/users/me/messages/send`` (``{"raw", "threadId"?}``)
- ``POST /gmail/v1/users/me/drafts`` (``{"message": {"raw", "threadId"?}}``)
- ``POST /token`` (``grant_type=refresh_token``, form-encoded)

As strict as Gmail where our code could go wrong: a valid bearer token is required (else 401),
``raw`` must be base64url of an RFC 5322 message with at least one recipient, a ``threadId`` must
exist, unknown ids are 404 with Google's error body; the token endpoint answers ``invalid_grant``
for unknown or revoked refresh tokens and checks the client id/secret. Every request is recorded;
``fail`` queues scripted errors (e.g. 429 with ``Retry-After``) served before real handling.

Example::

    with FakeGoogle() as fake:
        fake.add_message("t1", sender="alice@example.com", to="me@example.com", subject="Lunch?", text="Noon?")
        client = GmailClient(Credentials(token=fake.access_token), base_url=fake.base_url)
        ...
        assert fake.sent[0].message["Subject"] == "Hi"
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from devfakes.loopback import JsonHandler, LoopbackServer, Request

PREFIX = "/gmail/v1/users/me/"
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


@dataclass
class Received(Request):
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}


@dataclass
class Fail:
    """Answer the next request matching ``method`` and ``path`` (prefix) with ``status``."""

    status: int
    method: str | None = None
    path: str = ""
    times: int = 1
    retry_after: str | None = None
    message: str = "scripted failure"


@dataclass
class Sent:
    """A message Gmail accepted through send or drafts.create, with its decoded RFC 5322 form."""

    id: str
    thread_id: str
    raw: str
    message: EmailMessage
    draft_id: str | None = None


class ApiFailure(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_raw(raw: str) -> EmailMessage:
    """Gmail's ``raw`` back into a message (strict base64url, as Gmail requires)."""
    if "+" in raw or "/" in raw:
        raise ApiFailure(400, "Invalid value for ByteString: raw is not base64url")
    try:
        data = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except (binascii.Error, ValueError):
        raise ApiFailure(400, "Invalid value for ByteString") from None
    msg = message_from_bytes(data, policy=default_policy)
    assert isinstance(msg, EmailMessage)
    return msg


@dataclass
class FakeGoogle(LoopbackServer):
    access_token: str = "ya29.fake-access-token"
    client_id: str = "fake-client-id.apps.googleusercontent.com"
    client_secret: str = "fake-client-secret"
    refresh_tokens: set[str] = field(default_factory=lambda: {"1//fake-refresh-token"})
    requests: list[Received] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    drafts: list[Sent] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Gmail message resources in ``format=full`` shape, by id (insertion order = oldest first)."""
    delay_s: float = 0.0
    """How long every Gmail API request takes before it is answered (a slow service)."""

    def __post_init__(self) -> None:
        self.valid_tokens = {self.access_token}
        self._fails: deque[Fail] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    # ---- lifecycle ---------------------------------------------------------------------------
    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_class(self)

    @property
    def base_url(self) -> str:
        return self.root + "/"

    @property
    def token_uri(self) -> str:
        return self.base_url + "token"

    # ---- scripting ---------------------------------------------------------------------------
    def fail(self, *items: Fail) -> None:
        with self._lock:
            self._fails.extend(items)

    def revoke(self, refresh_token: str) -> None:
        with self._lock:
            self.refresh_tokens.discard(refresh_token)

    def add_message(self, thread_id: str, *, sender: str, to: str, subject: str, text: str | None = None,
                    html: str | None = None, message_id: str | None = None, references: str | None = None,
                    date: str = "Mon, 2 Mar 2026 09:00:00 +0000", snippet: str | None = None,
                    cc: str | None = None, attachment: str | None = None) -> str:
        """Store a message in ``thread_id`` (created if new); returns its id."""
        mid = f"m{next(self._ids):04d}"
        headers = [{"name": "From", "value": sender}, {"name": "To", "value": to},
                   {"name": "Subject", "value": subject}, {"name": "Date", "value": date},
                   {"name": "Message-ID", "value": message_id or f"<{mid}@mail.example.com>"}]
        if cc:
            headers.append({"name": "Cc", "value": cc})
        if references:
            headers.append({"name": "References", "value": references})
        parts: list[dict[str, Any]] = []
        if text is not None:
            parts.append({"partId": "0", "mimeType": "text/plain",
                          "headers": [{"name": "Content-Type", "value": "text/plain; charset=\"UTF-8\""}],
                          "body": {"size": len(text.encode()), "data": b64url(text.encode())}})
        if html is not None:
            parts.append({"partId": str(len(parts)), "mimeType": "text/html",
                          "headers": [{"name": "Content-Type", "value": "text/html; charset=UTF-8"}],
                          "body": {"size": len(html.encode()), "data": b64url(html.encode())}})
        payload: dict[str, Any] = {"partId": "", "mimeType": "multipart/alternative", "headers": headers,
                                   "body": {"size": 0}, "parts": parts}
        if attachment:
            payload = {"partId": "", "mimeType": "multipart/mixed", "headers": headers, "body": {"size": 0},
                       "parts": [{**payload, "headers": [], "partId": "0"},
                                 {"partId": "1", "mimeType": "application/pdf", "filename": attachment,
                                  "headers": [], "body": {"attachmentId": "att1", "size": 1234}}]}
        with self._lock:
            self.messages[mid] = {"id": mid, "threadId": thread_id, "labelIds": ["INBOX"],
                                  "snippet": snippet if snippet is not None else (text or "")[:100],
                                  "payload": payload, "internalDate": "1772442000000"}
        return mid

    # ---- request handling --------------------------------------------------------------------
    def dispatch(self, req: Received) -> tuple[int, dict[str, Any], dict[str, str]]:
        if self.delay_s and req.path.startswith(PREFIX):
            time.sleep(self.delay_s)
        with self._lock:
            self.requests.append(req)
            for i, f in enumerate(self._fails):
                if (f.method is None or f.method == req.method) and req.path.startswith(f.path):
                    f.times -= 1
                    if f.times <= 0:
                        del self._fails[i]
                    headers = {"Retry-After": f.retry_after} if f.retry_after else {}
                    return f.status, _error_body(f.status, f.message), headers
        try:
            if req.path == "/token" and req.method == "POST":
                return 200, self._token(req.form()), {}
            if not req.path.startswith(PREFIX):
                raise ApiFailure(404, f"no such path {req.path}")
            if req.headers.get("authorization", "") not in {f"Bearer {t}" for t in self.valid_tokens}:
                return 401, _error_body(401, "Request had invalid authentication credentials."), {}
            return 200, self._gmail(req), {}
        except ApiFailure as exc:
            if req.path == "/token":
                return exc.status, {"error": "invalid_grant", "error_description": exc.message}, {}
            return exc.status, _error_body(exc.status, exc.message), {}

    def _token(self, form: dict[str, str]) -> dict[str, Any]:
        if form.get("grant_type") != "refresh_token":
            raise ApiFailure(400, "unsupported grant_type")
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            raise ApiFailure(401, "The OAuth client was not found.")
        with self._lock:
            if form.get("refresh_token") not in self.refresh_tokens:
                raise ApiFailure(400, "Token has been expired or revoked.")
            token = f"ya29.refreshed-{next(self._ids)}"
            self.valid_tokens.add(token)
        return {"access_token": token, "expires_in": 3599, "token_type": "Bearer",
                "scope": "https://www.googleapis.com/auth/gmail.modify"}

    def _gmail(self, req: Received) -> dict[str, Any]:
        rest = req.path[len(PREFIX):]
        parts = rest.split("/")
        if req.method == "GET" and rest == "messages":
            return self._list(req)
        if req.method == "GET" and len(parts) == 2 and parts[0] == "messages":
            with self._lock:
                msg = self.messages.get(parts[1])
            if msg is None:
                raise ApiFailure(404, "Requested entity was not found.")
            return _shaped(msg, req)
        if req.method == "GET" and len(parts) == 2 and parts[0] == "threads":
            with self._lock:
                items = [m for m in self.messages.values() if m["threadId"] == parts[1]]
            if not items:
                raise ApiFailure(404, "Requested entity was not found.")
            return {"id": parts[1], "historyId": "1", "messages": [_shaped(m, req) for m in items]}
        if req.method == "POST" and rest == "messages/send":
            body = req.json() or {}
            return self._accept(body, draft=False)
        if req.method == "GET" and rest == "drafts":
            return self._drafts_list(req)
        if req.method == "POST" and rest == "drafts":
            body = req.json() or {}
            sent = self._accept(body.get("message") or {}, draft=True)
            return {"id": sent["draftId"], "message": {k: v for k, v in sent.items() if k != "draftId"}}
        raise ApiFailure(404, f"no such method {req.method} {req.path}")

    def _by_message_id(self, terms: list[str], *, drafts: bool) -> list[dict[str, Any]] | None:
        """Gmail's ``rfc822msgid:`` search (with ``in:sent``/``in:drafts``) over what was sent and
        drafted through the fake; ``None`` when the query has no ``rfc822msgid:`` term."""
        wanted = next((t.split(":", 1)[1] for t in terms if t.startswith("rfc822msgid:")), None)
        if wanted is None:
            return None
        pools = [self.drafts] if drafts or "in:drafts" in terms else \
            [self.sent] if "in:sent" in terms else [self.sent, self.drafts]
        return [{"id": e.id, "threadId": e.thread_id, "draftId": e.draft_id}
                for pool in pools for e in reversed(pool)
                if str(e.message.get("Message-ID", "")).strip().strip("<>").lower() == wanted.strip("<>")]

    def _drafts_list(self, req: Received) -> dict[str, Any]:
        terms = (req.param("q") or "").lower().split()
        with self._lock:
            hits = self._by_message_id(terms, drafts=True)
            if hits is None:
                hits = [{"id": e.id, "threadId": e.thread_id, "draftId": e.draft_id} for e in reversed(self.drafts)]
        size = int(req.param("maxResults") or 100)
        drafts = [{"id": h["draftId"], "message": {"id": h["id"], "threadId": h["threadId"]}} for h in hits[:size]]
        return {"drafts": drafts, "resultSizeEstimate": len(hits)} if drafts else {"resultSizeEstimate": 0}

    def _list(self, req: Received) -> dict[str, Any]:
        terms = (req.param("q") or "").lower().split()
        size = int(req.param("maxResults") or 100)
        start = int(req.param("pageToken") or 0)
        with self._lock:
            by_id = self._by_message_id(terms, drafts=False)
            if by_id is not None:
                page = [{"id": h["id"], "threadId": h["threadId"]} for h in by_id[:size]]
                return {"messages": page, "resultSizeEstimate": len(by_id)} if page else {"resultSizeEstimate": 0}
            found = []
            for m in reversed(list(self.messages.values())):  # newest first
                text = " ".join(f"{h['name']}:{h['value']}" for h in m["payload"]["headers"]).lower()
                text += " " + str(m["snippet"]).lower()
                if all(t.removeprefix("from:") in text for t in terms):
                    found.append({"id": m["id"], "threadId": m["threadId"]})
        page = found[start:start + size]
        out: dict[str, Any] = {"messages": page, "resultSizeEstimate": len(found)} if page else \
            {"resultSizeEstimate": 0}
        if start + size < len(found):
            out["nextPageToken"] = str(start + size)
        return out

    def _accept(self, body: dict[str, Any], *, draft: bool) -> dict[str, Any]:
        raw = body.get("raw")
        if not isinstance(raw, str) or not raw:
            raise ApiFailure(400, "'raw' RFC822 payload message string or uploading message via /upload/* URL "
                                  "required")
        msg = decode_raw(raw)
        if not draft and not any(msg.get(h) for h in ("To", "Cc", "Bcc")):
            raise ApiFailure(400, "Invalid To header")
        thread_id = body.get("threadId")
        with self._lock:
            if thread_id and not any(m["threadId"] == thread_id for m in self.messages.values()):
                raise ApiFailure(404, "Requested entity was not found.")
            mid = f"s{next(self._ids):04d}"
            entry = Sent(id=mid, thread_id=thread_id or mid, raw=raw, message=msg,
                         draft_id=f"r-{mid}" if draft else None)
            (self.drafts if draft else self.sent).append(entry)
        out: dict[str, Any] = {"id": mid, "threadId": entry.thread_id, "labelIds": ["DRAFT" if draft else "SENT"]}
        if draft:
            out["draftId"] = entry.draft_id
        return out


def _shaped(msg: dict[str, Any], req: Received) -> dict[str, Any]:
    """A message in the requested ``format`` (metadata: only the named headers, no body)."""
    if (req.param("format") or "full") != "metadata":
        return msg
    wanted = {h.lower() for h in req.query.get("metadataHeaders", [])}
    headers = [h for h in msg["payload"]["headers"] if not wanted or h["name"].lower() in wanted]
    return {**{k: v for k, v in msg.items() if k != "payload"},
            "payload": {"mimeType": msg["payload"]["mimeType"], "headers": headers}}


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN"),
                      "errors": [{"message": message, "domain": "global", "reason": "failed"}]}}


def _handler_class(fake: FakeGoogle) -> type[BaseHTTPRequestHandler]:
    class _Handler(JsonHandler):
        do_PUT = do_DELETE = JsonHandler.do_GET

        def serve(self) -> None:
            url = urlsplit(self.path)
            req = Received(method=self.command, path=url.path, query=parse_qs(url.query),
                           headers=self.lower_headers(), body=self.body())
            status, payload, headers = fake.dispatch(req)
            self.answer(status, payload, headers, content_type="application/json; charset=UTF-8")

    return _Handler
