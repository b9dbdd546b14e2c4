"""End to end on the real stores and the real client library against the fake Gmail server:
a scripted model asks to send mail -> approval -> resume (delivered 3 times) -> exactly one send."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devfakes.google import FakeGoogle
from shared.agent.approvals import decide
from shared.api import ApproveRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import Model
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Query
from shared.state.records import UserProfile, UserRecord
from tests.connectors.gmail_support import fresh_tokens, google_settings
from tests.connectors.loop_support import start
from tests.messages import deliver_published as deliver

MAIL = {"to": ["bob@example.com"], "cc": ["carol@example.com"], "subject": "Lunch on Friday",
        "body": "Hi Bob, shall we have lunch on Friday at noon?"}


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as f:
        yield f


def runtime(fake: FakeGoogle, store: DocStore, model: Model, *, trust: str = "supervised",
            allow: list[str] | None = None, connect: bool = True, **settings: Any) -> Runtime:
    rt = Runtime(google_settings(fake, **settings), store=store, model=model, dispatcher=RecordingDispatcher())
    rt.users.put_user(UserRecord(uid="alice", trust_level=trust,
                                 profile=UserProfile(email_allowlist=allow or [])))
    if connect:
        rt.connectors().vault.put("alice", "google", fresh_tokens(fake))
    return rt


def test_send_needs_approval_then_sends_exactly_once(fake: FakeGoogle, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("gmail_send", MAIL)), text_turn("Sent your invitation to Bob.")])
    rt = runtime(fake, store, model)
    result = start(rt, "Invite Bob to lunch on Friday, cc Carol")
    assert result.status == "awaiting_confirmation" and result.approval is not None
    assert not fake.sent and not [r for r in fake.requests if r.method == "POST"]
    preview = result.approval.preview
    assert preview.startswith("Send an email\nTo: bob@example.com\nCc: carol@example.com\nSubject: Lunch on Friday")
    assert "Hi Bob, shall we have lunch" in preview

    decide(rt.services, rt.dispatcher, "alice", ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver(rt, copies=3)  # the resume message redelivered

    sends = [r for r in fake.requests if r.path == "/gmail/v1/users/me/messages/send"]
    assert len(sends) == 1 and len(fake.sent) == 1
    msg = fake.sent[0].message
    assert (msg["To"], msg["Cc"], msg["Subject"]) == ("bob@example.com", "carol@example.com", "Lunch on Friday")
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "completed" and action.attempts == 1
    assert action.result == {"sent": True, "messageId": "s0001", "threadId": "s0001"}
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response["sent"] is True
    model.assert_complete()


def test_delegated_allowlisted_recipients_send_without_approval(fake: FakeGoogle, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("gmail_send", MAIL)), text_turn("Sent.")])
    rt = runtime(fake, store, model, trust="delegated", allow=["bob@example.com", "carol@example.com"])
    result = start(rt, "Invite Bob")
    assert result.status == "completed" and len(fake.sent) == 1


def test_delegated_with_an_unlisted_bcc_waits_for_approval(fake: FakeGoogle, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("gmail_send", {**MAIL, "bcc": ["eve@example.com"]}))])
    rt = runtime(fake, store, model, trust="delegated", allow=["bob@example.com", "carol@example.com"])
    result = start(rt, "Invite Bob")
    assert result.status == "awaiting_confirmation" and not fake.sent
    assert result.approval is not None and "Bcc: eve@example.com" in result.approval.preview


def test_missing_credentials_fail_the_action_never_silently(fake: FakeGoogle, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("gmail_send", MAIL)), text_turn("I could not send it.")])
    rt = runtime(fake, store, model, trust="autonomous", connect=False)
    result = start(rt, "Invite Bob")
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "failed" and action.outcome == "error"
    assert action.error == "Google is not connected for this user; ask them to connect it"
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response == {"error": action.error}
    assert not fake.requests
    results = [a.data for a in store.query(Query("audit")) if a.data.get("kind") == "side_effect_result"]
    assert [r["decision"] for r in results] == ["error"]


def test_invalid_recipient_fails_fast_without_a_send(fake: FakeGoogle, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("gmail_send", {**MAIL, "to": ["bob at example"]}))])
    rt = runtime(fake, store, model, trust="autonomous")
    result = start(rt, "Invite Bob")
    assert result.status == "failed" and not fake.requests
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "failed" and "is not a valid email address" in (action.error or "")


def test_kill_switch_denies_the_send(fake: FakeGoogle, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("gmail_send", MAIL)), text_turn("Sending is disabled.")])
    rt = runtime(fake, store, model, trust="autonomous", side_effects_enabled=False)
    start(rt, "Invite Bob")
    assert not fake.requests


def test_reply_preview_shows_the_subject_that_is_sent(fake: FakeGoogle, store: DocStore) -> None:
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Lunch on Friday",
                     message_id="<b1@example.com>", text="Noon?")
    reply = {"thread_id": "t1", "to": ["bob@example.com"], "subject": "Lunch on Friday", "body": "Noon works."}
    model = ScriptedModel([calls_turn(call("gmail_reply", reply)), text_turn("Replied.")])
    rt = runtime(fake, store, model)
    result = start(rt, "Tell Bob noon works")
    assert result.approval is not None and result.approval.preview == (
        "Reply in Gmail thread t1\nTo: bob@example.com\nSubject: Re: Lunch on Friday\nNoon works.")

    decide(rt.services, rt.dispatcher, "alice", ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver(rt, copies=2)

    (sent,) = fake.sent
    assert (sent.thread_id, sent.message["Subject"], sent.message["In-Reply-To"]) == (
        "t1", "Re: Lunch on Friday", "<b1@example.com>")


def test_reply_whose_thread_moved_on_after_approval_is_not_sent(fake: FakeGoogle, store: DocStore) -> None:
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Lunch on Friday", text="?")
    reply = {"thread_id": "t1", "to": ["bob@example.com"], "subject": "Lunch on Friday", "body": "Noon works."}
    model = ScriptedModel([calls_turn(call("gmail_reply", reply)), text_turn("The thread changed; not sent.")])
    rt = runtime(fake, store, model)
    result = start(rt, "Tell Bob noon works")
    assert result.approval is not None and "Subject: Re: Lunch on Friday" in result.approval.preview
    # Before the decision, the thread's latest message turns to something else.
    fake.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Layoffs", text="!")

    decide(rt.services, rt.dispatcher, "alice", ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver(rt, copies=1)

    assert not fake.sent  # what was approved is not what would have been sent
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "failed" and action.outcome == "error"
    assert action.error is not None and action.error.startswith(
        "Gmail: the reply subject 'Re: Lunch on Friday' does not match thread 't1', whose latest message has "
        "subject 'Layoffs'; nothing was sent.")
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response == {"error": action.error}


def test_a_result_over_the_runtime_cap_reaches_the_model_truncated_with_a_note(
        fake: FakeGoogle, store: DocStore) -> None:
    from shared.loop.tool_calls import MAX_RESULT_CHARS

    for i in range(10):  # ten bodies of 4,000 characters (each at the adapter's cut): ~41,000 in all
        fake.add_message("big", sender="bob@example.com", to="alice@example.com", subject=f"Part {i}",
                         text=f"{i}" * 5000)
    model = ScriptedModel([calls_turn(call("gmail_thread_read", {"thread_id": "big"})), text_turn("Long one.")])
    rt = runtime(fake, store, model, trust="supervised")
    result = start(rt, "Summarize the big thread")

    assert result.status == "completed"  # a read: no approval
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.result is not None and set(action.result) == {"truncated", "note", "partial"}
    assert action.result["truncated"] is True
    note = action.result["note"]
    total = int(note.removeprefix("the result was ").removesuffix(" characters; showing the start"))
    assert note == f"the result was {total} characters; showing the start" and total > 40_000
    partial = action.result["partial"]
    assert len(partial) == MAX_RESULT_CHARS and partial.startswith('{"threadId": "big", "messages": [{"id": ')
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response == action.result
