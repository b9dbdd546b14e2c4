"""End to end on the real stores and the real client library against the fake Gmail server:
a scripted model asks to send mail -> approval -> resume (delivered 3 times) -> exactly one send."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shared.agent.approvals import decide
from shared.agent.resume import handle_message
from shared.api import ApproveRequest, RunRequest
from shared.dispatch import RecordingDispatcher
from shared.models.base import Model
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Query
from shared.state.records import RunResult, UserProfile, UserRecord
from tests.connectors.fake_google import FakeGoogle
from tests.connectors.gmail_support import fresh_tokens, google_settings

MAIL = {"to": ["bob@example.com"], "cc": ["carol@example.com"], "subject": "Lunch on Friday",
        "body": "Hi Bob, shall we have lunch on Friday at noon?"}


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def store(request: pytest.FixtureRequest) -> DocStore:
    return request.getfixturevalue(f"{request.param}_docstore")  # type: ignore[no-any-return]


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


def start(rt: Runtime, prompt: str) -> RunResult:
    started = rt.agent.start("alice", RunRequest(prompt=prompt))
    return rt.agent.run(rt.agent.context(started))


def deliver(rt: Runtime, copies: int) -> None:
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, RecordingDispatcher)
    for message in dispatcher.take():
        for _ in range(copies):
            handle_message(rt.services, dispatcher, message)


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
