"""Gmail v1 adapter: the only module that talks to Gmail through ``googleapiclient``.

The service is built from the static discovery document (no network at build time); ``base_url``
replaces ``https://gmail.googleapis.com/`` (a local fake in tests). Results are bounded before they
reach the model: HTML is reduced to text, long bodies and long threads are trimmed with a note.
Outgoing mail is a proper RFC 5322 message (UTF-8, RFC 2047 headers, base64url ``raw``); replies
carry ``threadId``, ``In-Reply-To``, ``References`` and a ``Re:`` subject.

```python
with GmailClient(credentials, base_url=None, sender="me@example.com") as client:
    hits = client.search("from:alice newer_than:7d", max_results=10)
    thread = client.read_thread(hits.messages[0].thread_id)
    sent = client.send(OutgoingMail(to=["bob@example.com"], subject="Hi", body="Hello"))
```
"""

from __future__ import annotations

import base64
import html
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate
from typing import Any

from google.auth.credentials import Credentials
from pydantic import BaseModel, Field

from shared.connectors.google_http import HTTP_TIMEOUT_S, RetryPolicy, build_service, execute
from shared.connectors.mail_text import html_to_text, reply_subject, same_subject, trim
from shared.errors import ToolError
from shared.formats import b64decode_any

SERVICE = "Gmail"
USER = "me"
MAX_SEARCH_RESULTS = 25
MAX_THREAD_MESSAGES = 10
MAX_BODY_CHARS = 4000
MESSAGE_ID_DOMAIN = "agent-runtime.local"
"""The right-hand side of our ``Message-ID`` when the account's address is unknown."""
SUMMARY_HEADERS = ["From", "To", "Subject", "Date"]
REPLY_HEADERS = ["Subject", "Message-ID", "References", "From", "To", "Cc"]
# 7-bit output: non-ASCII headers become RFC 2047 words and bodies quoted-printable/base64.
_POLICY = SMTP.clone(cte_type="7bit")


class MessageSummary(BaseModel):
    id: str
    thread_id: str
    sender: str = Field(default="", serialization_alias="from")
    to: str = ""
    subject: str = ""
    date: str = ""
    snippet: str = ""


class SearchResult(BaseModel):
    messages: list[MessageSummary]
    more: bool = False
    """True when Gmail holds further matches than were returned."""


class ThreadMessage(BaseModel):
    id: str
    sender: str = Field(default="", serialization_alias="from")
    to: str = ""
    cc: str = ""
    subject: str = ""
    date: str = ""
    message_id: str = ""
    body: str = ""
    attachments: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class ThreadView(BaseModel):
    id: str
    messages: list[ThreadMessage]
    notes: list[str] = Field(default_factory=list)
    """What was left out (earlier messages, trimmed bodies)."""


class OutgoingMail(BaseModel):
    """A message to send or draft. Addresses are validated by the tools before they get here."""

    to: list[str]
    subject: str
    body: str
    cc: list[str] = Field(default_factory=list)
    bcc: list[str] = Field(default_factory=list)
    thread_id: str | None = None
    in_reply_to: str | None = None
    references: str | None = None
    message_id: str | None = None
    """The ``Message-ID`` header (:meth:`GmailClient.message_id_for`); Gmail makes one when absent."""


class SentMessage(BaseModel):
    id: str
    thread_id: str
    draft_id: str | None = None


def _headers(payload: dict[str, Any]) -> dict[str, str]:
    """Header name (lower case) -> value; the first occurrence wins."""
    out: dict[str, str] = {}
    for h in payload.get("headers") or []:
        name = str(h.get("name", "")).lower()
        if name and name not in out:
            out[name] = str(h.get("value", ""))
    return out


def _decode(data: str, charset: str | None) -> str:
    try:
        raw = b64decode_any(data)
    except ValueError:
        return ""
    try:
        return raw.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return raw.decode("utf-8", errors="replace")


def _charset(part: dict[str, Any]) -> str | None:
    ctype = _headers(part).get("content-type", "")
    for param in ctype.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset":
            return value.strip().strip('"') or None
    return None


def _collect(part: dict[str, Any], plain: list[str], htmls: list[str], attachments: list[str]) -> None:
    mime = str(part.get("mimeType", "")).lower()
    body = part.get("body") or {}
    if part.get("filename"):
        attachments.append(str(part["filename"]))
        return
    if mime.startswith("multipart/"):
        for sub in part.get("parts") or []:
            _collect(sub, plain, htmls, attachments)
        return
    data = body.get("data")
    if not data:
        return
    if mime == "text/plain":
        plain.append(_decode(str(data), _charset(part)))
    elif mime == "text/html":
        htmls.append(_decode(str(data), _charset(part)))


def message_text(payload: dict[str, Any]) -> tuple[str, list[str]]:
    """The readable body of a Gmail message payload (text/plain preferred, else HTML as text)
    and the names of its attachments."""
    plain: list[str] = []
    htmls: list[str] = []
    attachments: list[str] = []
    _collect(payload, plain, htmls, attachments)
    if plain:
        return "\n".join(p.strip() for p in plain).strip(), attachments
    return "\n".join(html_to_text(h) for h in htmls).strip(), attachments


def build_message(mail: OutgoingMail, *, sender: str | None = None) -> EmailMessage:
    """The RFC 5322 message for ``mail`` (UTF-8 body; Bcc kept: Gmail delivers and strips it)."""
    msg = EmailMessage(policy=_POLICY)
    if sender:
        msg["From"] = sender
    msg["To"] = ", ".join(mail.to)
    if mail.cc:
        msg["Cc"] = ", ".join(mail.cc)
    if mail.bcc:
        msg["Bcc"] = ", ".join(mail.bcc)
    msg["Subject"] = mail.subject
    msg["Date"] = formatdate(usegmt=True)
    if mail.message_id:
        msg["Message-ID"] = mail.message_id
    if mail.in_reply_to:
        msg["In-Reply-To"] = mail.in_reply_to
        msg["References"] = mail.references or mail.in_reply_to
    msg.set_content(mail.body, charset="utf-8")
    return msg


def encode_raw(msg: EmailMessage) -> str:
    """Gmail's ``raw``: the message bytes, base64url (unpadded, as Gmail writes it)."""
    return base64.urlsafe_b64encode(msg.as_bytes()).decode().rstrip("=")


class GmailClient:
    """Gmail v1 for one user's credentials.

    Args:
        credentials: The user's OAuth credentials (refreshed by google-auth when expired).
        base_url: Root URL of the API (default Google's); method paths start with ``gmail/v1/``.
        sender: The account's address for the ``From`` header (Gmail fills it in when absent).
        retry: Attempts and backoff for rate limiting (tests pass a recording ``sleep``).
        timeout_s: Socket timeout of every request (tools pass their time left).
    """

    def __init__(self, credentials: Credentials, *, base_url: str | None = None, sender: str | None = None,
                 retry: RetryPolicy | None = None, timeout_s: float = HTTP_TIMEOUT_S) -> None:
        self._service = build_service("gmail", "v1", credentials, base_url=base_url, timeout_s=timeout_s)
        self._sender = sender
        self._retry = retry

    def message_id_for(self, key: str) -> str:
        """The ``Message-ID`` of the message sent for ``key`` (an action id): the same key always
        names the same message, so :meth:`find_sent` can tell whether it left."""
        domain = self._sender.rsplit("@", 1)[1] if self._sender and "@" in self._sender else MESSAGE_ID_DOMAIN
        return f"<agent-runtime.{key}@{domain}>"

    def find_sent(self, message_id: str) -> SentMessage | None:
        """The sent message whose ``Message-ID`` is ``message_id``, or ``None`` when none was sent."""
        page = self._run(self._service.users().messages().list(
            userId=USER, q=f"in:sent rfc822msgid:{message_id.strip('<>')}", maxResults=1),
            what="the sent mail", idempotent=True)
        hits = page.get("messages") or []
        return SentMessage(id=str(hits[0].get("id", "")), thread_id=str(hits[0].get("threadId", ""))) if hits \
            else None

    def find_draft(self, message_id: str) -> SentMessage | None:
        """The draft whose message has ``Message-ID`` ``message_id``, or ``None``."""
        page = self._run(self._service.users().drafts().list(
            userId=USER, q=f"rfc822msgid:{message_id.strip('<>')}", maxResults=1),
            what="the drafts", idempotent=True)
        hits = page.get("drafts") or []
        if not hits:
            return None
        msg = hits[0].get("message") or {}
        return SentMessage(id=str(msg.get("id", "")), thread_id=str(msg.get("threadId", "")),
                           draft_id=str(hits[0].get("id", "")))

    def close(self) -> None:
        """Close the HTTP connections (the client is not usable afterwards)."""
        self._service.close()

    def __enter__(self) -> GmailClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, request: Any, *, what: str, idempotent: bool) -> dict[str, Any]:
        return execute(request, service=SERVICE, what=what, idempotent=idempotent, retry=self._retry)

    def search(self, query: str, *, max_results: int = 10) -> SearchResult:
        """Messages matching the Gmail search ``query``, newest first (at most 25)."""
        size = max(1, min(MAX_SEARCH_RESULTS, max_results))
        messages = self._service.users().messages()
        page = self._run(messages.list(userId=USER, q=query, maxResults=size), what="the mailbox", idempotent=True)
        out: list[MessageSummary] = []
        for ref in (page.get("messages") or [])[:size]:
            mid = str(ref.get("id", ""))
            raw = self._run(messages.get(userId=USER, id=mid, format="metadata", metadataHeaders=SUMMARY_HEADERS),
                            what=f"message {mid!r}", idempotent=True)
            h = _headers(raw.get("payload") or {})
            out.append(MessageSummary(id=mid, thread_id=str(raw.get("threadId") or ref.get("threadId") or ""),
                                      sender=h.get("from", ""), to=h.get("to", ""), subject=h.get("subject", ""),
                                      date=h.get("date", ""), snippet=html.unescape(str(raw.get("snippet", "")))))
        return SearchResult(messages=out, more=bool(page.get("nextPageToken")))

    def read_thread(self, thread_id: str) -> ThreadView:
        """The thread's latest messages (at most 10) with bodies as text, each trimmed to 4000 characters."""
        raw = self._run(self._service.users().threads().get(userId=USER, id=thread_id, format="full"),
                        what=f"thread {thread_id!r}", idempotent=True)
        items = raw.get("messages") or []
        notes: list[str] = []
        if len(items) > MAX_THREAD_MESSAGES:
            notes.append(f"the thread has {len(items)} messages; showing the last {MAX_THREAD_MESSAGES}")
            items = items[-MAX_THREAD_MESSAGES:]
        messages: list[ThreadMessage] = []
        for item in items:
            payload = item.get("payload") or {}
            h = _headers(payload)
            body, attachments = message_text(payload)
            body, note = trim(body, MAX_BODY_CHARS)
            messages.append(ThreadMessage(
                id=str(item.get("id", "")), sender=h.get("from", ""), to=h.get("to", ""), cc=h.get("cc", ""),
                subject=h.get("subject", ""), date=h.get("date", ""), message_id=h.get("message-id", ""),
                body=body, attachments=attachments, notes=[note] if note else []))
        return ThreadView(id=str(raw.get("id") or thread_id), messages=messages, notes=notes)

    def send(self, mail: OutgoingMail) -> SentMessage:
        """Send ``mail`` (once: a failed send is never repeated except when rate limited)."""
        body: dict[str, Any] = {"raw": encode_raw(build_message(mail, sender=self._sender))}
        if mail.thread_id:
            body["threadId"] = mail.thread_id
        out = self._run(self._service.users().messages().send(userId=USER, body=body),
                        what="the message", idempotent=False)
        return SentMessage(id=str(out.get("id", "")), thread_id=str(out.get("threadId", "")))

    def create_draft(self, mail: OutgoingMail) -> SentMessage:
        """Save ``mail`` as a draft (in its thread when ``thread_id`` is set)."""
        message: dict[str, Any] = {"raw": encode_raw(build_message(mail, sender=self._sender))}
        if mail.thread_id:
            message["threadId"] = mail.thread_id
        out = self._run(self._service.users().drafts().create(userId=USER, body={"message": message}),
                        what="the draft", idempotent=False)
        msg = out.get("message") or {}
        return SentMessage(id=str(msg.get("id", "")), thread_id=str(msg.get("threadId", "")),
                           draft_id=str(out.get("id", "")))

    def reply_to(self, thread_id: str, *, to: list[str], body: str, cc: list[str] | None = None,
                 bcc: list[str] | None = None, subject: str | None = None, draft: bool = False,
                 message_id: str | None = None) -> SentMessage:
        """Reply in ``thread_id`` to its latest message, to exactly the given recipients.

        ``In-Reply-To``/``References`` follow RFC 5322. Without ``subject`` the reply's subject is
        the latest message's with ``Re:``. With ``subject`` (what a person approved), it must name
        the same conversation as the latest message (:func:`same_subject`), else a ``ToolError``
        and nothing is sent; the reply then carries ``reply_subject(subject)``, exactly the
        approved text.
        """
        raw = self._run(self._service.users().threads().get(userId=USER, id=thread_id, format="metadata",
                                                            metadataHeaders=REPLY_HEADERS),
                        what=f"thread {thread_id!r}", idempotent=True)
        items = raw.get("messages") or []
        if not items:
            raise ToolError(f"{SERVICE}: thread {thread_id!r} has no messages to reply to")
        last = _headers(items[-1].get("payload") or {})
        actual = last.get("subject", "")
        if subject is not None and not same_subject(subject, actual):
            raise ToolError(f"{SERVICE}: the reply subject {reply_subject(subject)!r} does not match thread "
                            f"{thread_id!r}, whose latest message has subject {actual[:200]!r}; nothing was sent. "
                            f"Reply again with subject {reply_subject(actual)[:200]!r} if this is the thread you "
                            "meant")
        parent = last.get("message-id", "").strip()
        refs = " ".join(x for x in (last.get("references", "").strip(), parent) if x) or None
        sent_subject = reply_subject(actual if subject is None else subject)
        mail = OutgoingMail(to=to, cc=cc or [], bcc=bcc or [], subject=sent_subject, body=body,
                            thread_id=str(raw.get("id") or thread_id), in_reply_to=parent or None,
                            references=refs, message_id=message_id)
        return self.create_draft(mail) if draft else self.send(mail)
