"""The Gmail tools: ``gmail_search``, ``gmail_thread_read`` (read-only), ``gmail_draft_create``,
``gmail_reply`` and ``gmail_send`` (side effects, never repeated: a repeat would send twice).

Every message they write carries a ``Message-ID`` derived from the action id, so after a crash cut
a call off, recovery asks Gmail (``rfc822msgid:`` search) whether it was sent or drafted: found →
recorded as done, not found → sent once (``docs/recovery.md``).

Arguments are validated before any policy decision: recipients must be bare, well-formed
addresses (at least one ``to``), subjects a single line. Every recipient (to, cc, bcc) is declared
through ``recipients=``, so a ``delegated`` user sends without approval only when all of them are
in their allowlist. Previews show recipients, subject and the start of the body, never JSON; a
reply's subject is an argument (checked against the thread when it runs), so its preview needs no I/O.
The Gmail adapter (and ``googleapiclient``) is imported only when one of these tools runs.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from shared.connectors import require_connectors
from shared.tools.constrained import Constrained as _Constrained
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from shared.connectors.gmail import GmailClient, OutgoingMail, SentMessage

GMAIL_TIMEOUT_S = 30.0
"""Socket timeout of a Gmail request, lowered to the invocation's time left."""
MAX_RECIPIENTS = 50
MAX_SUBJECT_CHARS = 250
MAX_BODY_CHARS = 20_000
PREVIEW_BODY_CHARS = 240
# A bare addr-spec with a dotted domain (RFC 5322 dot-atom local part; no quoted forms, no
# display names): what reaches a header is exactly what the policy compared with the allowlist.
_ADDRESS = re.compile(
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def _address(value: str) -> str:
    addr = value.strip()
    if len(addr) > 254 or not _ADDRESS.match(addr):
        raise PydanticCustomError("email_address", "'{value}' is not a valid email address (use name@domain)",
                                  {"value": value[:100]})
    return addr


def _subject(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise PydanticCustomError("subject_line", "the subject must be a single line")
    return value.strip()


def _thread_id(value: str) -> str:
    if not _ID.match(value.strip()):
        raise PydanticCustomError("thread_id", "not a Gmail thread id (letters, digits, '-' or '_')")
    return value.strip()


_ADDRESS_SCHEMA = core_schema.no_info_after_validator_function(_address, core_schema.str_schema(max_length=320))
_ADDRESS_JSON: JsonSchemaValue = {"type": "string", "description": "A bare email address, name@domain."}


class Recipients(_Constrained, list[str]):
    """One or more email addresses."""

    schema = core_schema.list_schema(_ADDRESS_SCHEMA, min_length=1, max_length=MAX_RECIPIENTS)
    json = {"type": "array", "items": _ADDRESS_JSON, "minItems": 1, "maxItems": MAX_RECIPIENTS}


class OptionalRecipients(_Constrained, list[str]):
    """Zero or more email addresses."""

    schema = core_schema.list_schema(_ADDRESS_SCHEMA, max_length=MAX_RECIPIENTS)
    json = {"type": "array", "items": _ADDRESS_JSON, "maxItems": MAX_RECIPIENTS}


class Subject(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(
        _subject, core_schema.str_schema(max_length=MAX_SUBJECT_CHARS))
    json = {"type": "string", "maxLength": MAX_SUBJECT_CHARS}


class Body(_Constrained, str):
    schema = core_schema.str_schema(min_length=1, max_length=MAX_BODY_CHARS, strip_whitespace=True)
    json = {"type": "string", "minLength": 1, "maxLength": MAX_BODY_CHARS}


class ThreadId(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(_thread_id, core_schema.str_schema())
    json = {"type": "string"}


# ---- policy and previews -------------------------------------------------------------------------

def mail_recipients(args: BaseModel) -> list[str]:
    """Every recipient of a mail call: to + cc + bcc (what the delegated allowlist checks)."""
    out: list[str] = []
    for name in ("to", "cc", "bcc"):
        out.extend(getattr(args, name, None) or [])
    return out


def _body_start(body: str) -> str:
    flat = " ".join(body.split())
    return flat if len(flat) <= PREVIEW_BODY_CHARS else flat[:PREVIEW_BODY_CHARS].rstrip() + " …"


def _people(args: BaseModel) -> str:
    parts = [f"To: {', '.join(getattr(args, 'to', None) or [])}"]
    for name, label in (("cc", "Cc"), ("bcc", "Bcc")):
        addrs = getattr(args, name, None) or []
        if addrs:
            parts.append(f"{label}: {', '.join(addrs)}")
    return "\n".join(parts)


def _send_preview(args: BaseModel) -> str:
    return (f"Send an email\n{_people(args)}\nSubject: {getattr(args, 'subject', '') or '(no subject)'}\n"
            f"{_body_start(str(getattr(args, 'body', '')))}")


def _draft_preview(args: BaseModel) -> str:
    return (f"Save a draft (not sent)\n{_people(args)}\n"
            f"Subject: {getattr(args, 'subject', '') or '(no subject)'}\n{_body_start(str(getattr(args, 'body', '')))}")


def _reply_preview(args: BaseModel) -> str:
    # The subject shown is exactly the one sent: the tool passes the same ``subject`` argument,
    # and the adapter refuses to send when it does not match the thread (no I/O here).
    from shared.connectors.mail_text import reply_subject  # html.parser: not at registration

    return (f"Reply in Gmail thread {getattr(args, 'thread_id', '')}\n{_people(args)}\n"
            f"Subject: {reply_subject(str(getattr(args, 'subject', '')))}\n"
            f"{_body_start(str(getattr(args, 'body', '')))}")


# ---- the tools -----------------------------------------------------------------------------------

def _outgoing(to: list[str], subject: str, body: str, cc: list[str] | None, bcc: list[str] | None,
              message_id: str) -> OutgoingMail:
    from shared.connectors.gmail import OutgoingMail  # loads googleapiclient: only when a tool runs

    return OutgoingMail(to=to, cc=cc or [], bcc=bcc or [], subject=subject, body=body, message_id=message_id)


def _gmail(ctx: ToolContext) -> GmailClient:
    return require_connectors(ctx.connectors).gmail(
        ctx.uid, timeout_s=ctx.call_budget("Gmail", GMAIL_TIMEOUT_S), deadline=ctx.deadline)


def _sent_out(sent: SentMessage) -> dict[str, Any]:
    return {"sent": True, "messageId": sent.id, "threadId": sent.thread_id}


def _drafted_out(draft: SentMessage) -> dict[str, Any]:
    return {"drafted": True, "draftId": draft.draft_id, "messageId": draft.id, "threadId": draft.thread_id}


def _reconcile_sent(ctx: ToolContext, args: BaseModel) -> dict[str, Any] | None:
    """Whether the cut-off call's message left: Gmail is searched for its ``Message-ID``."""
    with _gmail(ctx) as client:
        found = client.find_sent(client.message_id_for(ctx.action_id))
    return None if found is None else _sent_out(found)


def _reconcile_draft(ctx: ToolContext, args: BaseModel) -> dict[str, Any] | None:
    with _gmail(ctx) as client:
        found = client.find_draft(client.message_id_for(ctx.action_id))
    return None if found is None else _drafted_out(found)


def register(registry: ToolRegistry) -> None:
    tool = functools.partial(registry.tool, connector="google")  # every tool here acts through it

    @tool(side_effect=False)
    def gmail_search(ctx: ToolContext, query: str, max_results: int = 10) -> dict[str, Any]:
        """Search the user's Gmail. Returns id, threadId, from, subject, date and snippet per message.

        Args:
            query: A Gmail search query, e.g. "from:alice@example.com newer_than:7d" or "invoice is:unread".
            max_results: How many messages to return, newest first (1-25).
        """
        with _gmail(ctx) as client:
            found = client.search(query, max_results=max_results)
        messages = [{"id": m.id, "threadId": m.thread_id, "from": m.sender, "subject": m.subject,
                     "date": m.date, "snippet": m.snippet} for m in found.messages]
        out: dict[str, Any] = {"messages": messages, "count": len(messages)}
        if found.more:
            out["note"] = "more messages match; refine the query or raise max_results to see others"
        return out

    @tool(side_effect=False)
    def gmail_thread_read(ctx: ToolContext, thread_id: ThreadId) -> dict[str, Any]:
        """Read a Gmail thread: each message's sender, recipients, subject, date and body as text.

        Args:
            thread_id: The threadId of a message (from gmail_search).
        """
        with _gmail(ctx) as client:
            thread = client.read_thread(thread_id)
        messages = [{"id": m.id, "from": m.sender, "to": m.to, "cc": m.cc, "subject": m.subject, "date": m.date,
                     "body": m.body, **({"attachments": m.attachments} if m.attachments else {}),
                     **({"notes": m.notes} if m.notes else {})} for m in thread.messages]
        out: dict[str, Any] = {"threadId": thread.id, "messages": messages}
        if thread.notes:
            out["notes"] = thread.notes
        return out

    @tool(side_effect=True, preview=_draft_preview, recipients=mail_recipients, reconcile=_reconcile_draft)
    def gmail_draft_create(ctx: ToolContext, to: Recipients, subject: Subject, body: Body,
                           cc: OptionalRecipients | None = None,
                           bcc: OptionalRecipients | None = None) -> dict[str, Any]:
        """Save an email as a Gmail draft for the user to review and send later (nothing is sent).

        Args:
            to: Recipient email addresses (at least one).
            subject: The subject line.
            body: The plain-text body.
            cc: Optional copy recipients.
            bcc: Optional blind-copy recipients.
        """
        with _gmail(ctx) as client:
            draft = client.create_draft(_outgoing(to, subject, body, cc, bcc, client.message_id_for(ctx.action_id)))
        return _drafted_out(draft)

    @tool(side_effect=True, preview=_send_preview, recipients=mail_recipients, reconcile=_reconcile_sent)
    def gmail_send(ctx: ToolContext, to: Recipients, subject: Subject, body: Body,
                   cc: OptionalRecipients | None = None, bcc: OptionalRecipients | None = None) -> dict[str, Any]:
        """Send a new email from the user's Gmail account.

        Args:
            to: Recipient email addresses (at least one).
            subject: The subject line.
            body: The plain-text body.
            cc: Optional copy recipients.
            bcc: Optional blind-copy recipients.
        """
        with _gmail(ctx) as client:
            sent = client.send(_outgoing(to, subject, body, cc, bcc, client.message_id_for(ctx.action_id)))
        return _sent_out(sent)

    @tool(side_effect=True, preview=_reply_preview, recipients=mail_recipients, reconcile=_reconcile_sent)
    def gmail_reply(ctx: ToolContext, thread_id: ThreadId, to: Recipients, subject: Subject, body: Body,
                    cc: OptionalRecipients | None = None, bcc: OptionalRecipients | None = None) -> dict[str, Any]:
        """Reply in a Gmail thread (to its latest message, with a "Re:" subject), sent to exactly these recipients.

        Args:
            thread_id: The threadId to reply in (from gmail_search or gmail_thread_read).
            to: Recipient email addresses, usually the sender of the latest message.
            subject: The subject of the thread's latest message, as gmail_search or gmail_thread_read showed it
                ("Re:" is added when missing). It is shown to the user for approval; if it does not match the
                thread, nothing is sent and the error names the thread's subject.
            body: The plain-text reply.
            cc: Optional copy recipients.
            bcc: Optional blind-copy recipients.
        """
        with _gmail(ctx) as client:
            sent = client.reply_to(thread_id, to=to, cc=cc, bcc=bcc, subject=subject, body=body,
                                   message_id=client.message_id_for(ctx.action_id))
        return _sent_out(sent)
