"""The Gmail tools: argument validation, previews, policy (trust levels, allowlist, kill switch),
and each tool run against the fake through ``ctx.connectors``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from devfakes.google import FakeGoogle
from shared import policy
from shared.connectors import ConnectorError
from shared.errors import ToolError
from shared.state.docstore import DocStore
from shared.state.records import UserProfile, UserRecord
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import Tool, ToolArgsError
from tests.connectors.gmail_support import connected, fresh_tokens, tool_context

REGISTRY = default_registry()
MAIL = {"to": ["bob@example.com"], "subject": "Quarterly numbers", "body": "Hi Bob, here they are."}


def tool(name: str) -> Tool:
    t = REGISTRY.get(name)
    assert t is not None
    return t


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as f:
        yield f


@pytest.fixture
def ctx(fake: FakeGoogle, sqlite_docstore: DocStore) -> ToolContext:
    return tool_context(connected(fake, sqlite_docstore), sqlite_docstore)


def run(name: str, ctx: ToolContext, **args: Any) -> dict[str, Any]:
    t = tool(name)
    return t.run(ctx, t.validate(args))


def test_declarations() -> None:
    names = {t.name for t in REGISTRY}
    assert {"gmail_search", "gmail_thread_read", "gmail_draft_create", "gmail_reply", "gmail_send"} <= names
    for name in ("gmail_draft_create", "gmail_reply", "gmail_send"):
        assert tool(name).side_effect and not tool(name).idempotent and tool(name).recipients_fn is not None
    for name in ("gmail_search", "gmail_thread_read"):
        assert not tool(name).side_effect
    schema = tool("gmail_send").declaration().parameters
    assert schema["required"] == ["to", "subject", "body"]
    assert schema["properties"]["to"]["minItems"] == 1 and schema["properties"]["to"]["items"]["type"] == "string"


@pytest.mark.parametrize(("args", "problem"), [
    ({**MAIL, "to": []}, "to: List should have at least 1 item"),
    ({**MAIL, "to": ["bob"]}, "to.0: 'bob' is not a valid email address"),
    ({**MAIL, "to": ["Bob <bob@example.com>"]}, "to.0: 'Bob <bob@example.com>' is not a valid email address"),
    ({**MAIL, "to": ["bob@example.com, eve@evil.com"]}, "to.0:"),
    ({**MAIL, "to": ["bob@localhost"]}, "to.0:"),
    ({**MAIL, "cc": ["not an address"]}, "cc.0:"),
    ({**MAIL, "bcc": ["x@y..com"]}, "bcc.0:"),
    ({**MAIL, "subject": "Hi\r\nBcc: eve@evil.com"}, "subject: the subject must be a single line"),
    ({**MAIL, "body": "   "}, "body: String should have at least 1 character"),
    ({"subject": "s", "body": "b"}, "to: Field required"),
    ({**MAIL, "sender": "x@y.com"}, "sender: Extra inputs are not permitted"),
])
def test_invalid_mail_arguments_are_tool_args_errors(args: dict[str, Any], problem: str) -> None:
    for name in ("gmail_send", "gmail_draft_create"):
        with pytest.raises(ToolArgsError) as exc:
            tool(name).validate(args)
        assert problem in str(exc.value)


def test_reply_needs_a_thread_id_and_recipients() -> None:
    with pytest.raises(ToolArgsError, match="thread_id"):
        tool("gmail_reply").validate({"thread_id": "../drafts", "to": ["bob@example.com"], "subject": "s",
                                      "body": "x"})
    with pytest.raises(ToolArgsError, match="to: List should have at least 1 item"):
        tool("gmail_reply").validate({"thread_id": "t1", "to": [], "subject": "s", "body": "x"})
    with pytest.raises(ToolArgsError, match="subject: Field required"):
        tool("gmail_reply").validate({"thread_id": "t1", "to": ["bob@example.com"], "body": "x"})
    with pytest.raises(ToolArgsError, match="subject: the subject must be a single line"):
        tool("gmail_reply").validate({"thread_id": "t1", "to": ["bob@example.com"], "subject": "a\nBcc: e@x.com",
                                      "body": "x"})


def test_previews_show_people_subject_and_body_start() -> None:
    args = tool("gmail_send").validate({**MAIL, "cc": ["carol@example.com"], "bcc": ["dan@example.com"],
                                        "body": "Hi Bob,\n\nhere they are. " + "blah " * 200})
    preview = tool("gmail_send").preview(args)
    lines = preview.splitlines()
    assert lines[:5] == ["Send an email", "To: bob@example.com", "Cc: carol@example.com", "Bcc: dan@example.com",
                         "Subject: Quarterly numbers"]
    assert lines[5].startswith("Hi Bob, here they are. blah") and lines[5].endswith("…") and len(lines[5]) < 260
    assert "{" not in preview and "'to'" not in preview
    draft = tool("gmail_draft_create").preview(tool("gmail_draft_create").validate(MAIL))
    assert draft.splitlines()[0] == "Save a draft (not sent)"
    reply = tool("gmail_reply").preview(tool("gmail_reply").validate(
        {"thread_id": "t9", "to": ["bob@example.com"], "subject": "Budget", "body": "Agreed."}))
    assert reply == "Reply in Gmail thread t9\nTo: bob@example.com\nSubject: Re: Budget\nAgreed."
    already = tool("gmail_reply").preview(tool("gmail_reply").validate(
        {"thread_id": "t9", "to": ["bob@example.com"], "cc": ["carol@example.com"], "subject": "RE: Budget",
         "body": "Agreed."}))
    assert already.splitlines()[1:4] == ["To: bob@example.com", "Cc: carol@example.com", "Subject: RE: Budget"]


def decide(name: str, args: dict[str, Any], user: UserRecord, enabled: bool = True) -> str:
    t = tool(name)
    return policy.decide(tool_name=t.name, side_effect=t.side_effect, args=t.validate(args), user=user,
                         side_effects_enabled=enabled, recipients=t.recipients_fn).verdict


def user(level: str, allow: list[str] | None = None) -> UserRecord:
    return UserRecord(uid="alice", trust_level=level,
                      profile=UserProfile(email_allowlist=allow or []))


@pytest.mark.parametrize(("level", "allow", "extra", "verdict"), [
    ("supervised", ["bob@example.com"], {}, "require_approval"),
    ("delegated", ["bob@example.com"], {}, "allow"),
    ("delegated", ["BOB@example.com"], {}, "allow"),
    ("delegated", [], {}, "require_approval"),
    ("delegated", ["bob@example.com"], {"cc": ["carol@example.com"]}, "require_approval"),
    ("delegated", ["bob@example.com"], {"bcc": ["eve@example.com"]}, "require_approval"),
    ("delegated", ["bob@example.com", "carol@example.com"], {"cc": ["carol@example.com"]}, "allow"),
    ("autonomous", [], {"bcc": ["eve@example.com"]}, "allow"),
])
def test_policy_for_mail(level: str, allow: list[str], extra: dict[str, Any], verdict: str) -> None:
    for name in ("gmail_send", "gmail_draft_create"):
        assert decide(name, {**MAIL, **extra}, user(level, allow)) == verdict
    reply = {"thread_id": "t1", "to": MAIL["to"], "subject": "Plan", "body": "ok", **extra}
    assert decide("gmail_reply", reply, user(level, allow)) == verdict


def test_kill_switch_wins_and_reads_are_always_allowed() -> None:
    for level in ("supervised", "delegated", "autonomous"):
        assert decide("gmail_send", MAIL, user(level, ["bob@example.com"]), enabled=False) == "deny"
        assert decide("gmail_search", {"query": "x"}, user(level), enabled=False) == "allow"
        assert decide("gmail_thread_read", {"thread_id": "t1"}, user(level), enabled=False) == "allow"


def test_search_and_read_tools(fake: FakeGoogle, ctx: ToolContext) -> None:
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Invoice", text="Pay me")
    out = run("gmail_search", ctx, query="invoice")
    assert out == {"count": 1, "messages": [{"id": "m0001", "threadId": "t1", "from": "bob@example.com",
                                             "subject": "Invoice", "date": "Mon, 2 Mar 2026 09:00:00 +0000",
                                             "snippet": "Pay me"}]}
    thread = run("gmail_thread_read", ctx, thread_id="t1")
    assert thread["threadId"] == "t1" and thread["messages"][0]["body"] == "Pay me"
    with pytest.raises(ToolError, match="thread 'zz' was not found"):
        run("gmail_thread_read", ctx, thread_id="zz")


def test_send_reply_and_draft_tools(fake: FakeGoogle, ctx: ToolContext) -> None:
    assert run("gmail_send", ctx, **MAIL) == {"sent": True, "messageId": "s0001", "threadId": "s0001"}
    assert fake.sent[0].message["From"] == "alice@example.com"  # the connected account
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Plan", text="?")
    out = run("gmail_reply", ctx, thread_id="t1", to=["bob@example.com"], subject="Plan", body="Yes.")
    assert out["threadId"] == "t1" and fake.sent[1].message["Subject"] == "Re: Plan"
    draft = run("gmail_draft_create", ctx, **MAIL)
    assert draft["drafted"] is True and draft["draftId"] and len(fake.sent) == 2 and len(fake.drafts) == 1


def test_tools_without_connection_fail_with_a_user_facing_error(fake: FakeGoogle, sqlite_docstore: DocStore) -> None:
    conn = connected(fake, sqlite_docstore)
    ctx = tool_context(conn, sqlite_docstore, uid="bob")
    with pytest.raises(ConnectorError, match="Google is not connected for this user"):
        run("gmail_send", ctx, **MAIL)
    no_runtime = ToolContext(uid="alice", run_id="r", action_id="a", users=ctx.users, settings=ctx.settings)
    with pytest.raises(ConnectorError, match="integrations are not available"):
        run("gmail_search", no_runtime, query="x")
    conn.vault.put("bob", "google", fresh_tokens(fake, refresh_token=None, expires_at=time.time() - 5))
    with pytest.raises(ConnectorError, match="expired"):
        run("gmail_send", ctx, **MAIL)
    assert not fake.sent


def test_reply_subject_must_match_the_thread(fake: FakeGoogle, ctx: ToolContext) -> None:
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Plan", text="?")
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="RE:  plan", text="??")
    with pytest.raises(ToolError) as info:
        run("gmail_reply", ctx, thread_id="t1", to=["bob@example.com"], subject="Payroll", body="Yes.")
    assert str(info.value) == ("Gmail: the reply subject 'Re: Payroll' does not match thread 't1', whose latest "
                               "message has subject 'RE:  plan'; nothing was sent. Reply again with subject "
                               "'RE:  plan' if this is the thread you meant")
    assert not fake.sent and [r.method for r in fake.requests] == ["GET"]
    # Case, spacing and "Re:" prefixes aside it matches; the approved subject is the one sent.
    run("gmail_reply", ctx, thread_id="t1", to=["bob@example.com"], subject="Re: Re: Plan", body="Yes.")
    assert [s.message["Subject"] for s in fake.sent] == ["Re: Re: Plan"]


def test_search_notes_when_more_messages_match(fake: FakeGoogle, ctx: ToolContext) -> None:
    for i in range(3):
        fake.add_message(f"t{i}", sender="bob@example.com", to="alice@example.com", subject=f"Invoice {i}", text="x")
    out = run("gmail_search", ctx, query="invoice", max_results=2)
    assert [m["subject"] for m in out["messages"]] == ["Invoice 2", "Invoice 1"] and out["count"] == 2
    assert out["note"] == "more messages match; refine the query or raise max_results to see others"
    assert "note" not in run("gmail_search", ctx, query="invoice", max_results=3)
