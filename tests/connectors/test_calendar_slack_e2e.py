"""End to end for Calendar and Slack, as test_gmail_e2e.py does for Gmail: the real stores, the
real agent loop and the real client libraries against the local fake APIs.

- A scripted model creates an event -> approval (supervised) -> resume delivered 3 times -> the
  fake Calendar received exactly one insert, with the exact body.
- ``slack_read`` is a read: it runs without approval even for a supervised user, follows Slack's
  cursors, and its trimmed result reaches the model.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from devfakes.calendar import FakeCalendar
from devfakes.slack import FakeSlack, cursor_for
from shared.agent.approvals import decide
from shared.api import ApproveRequest
from shared.config import Settings
from shared.connectors import IntegrationTokens
from shared.connectors.calendar import event_id_for
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import Model
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Query
from shared.state.records import UserRecord
from tests.connectors.loop_support import start
from tests.connectors.tool_support import started
from tests.messages import deliver_published as deliver

UID = "alice"
EVENT = {"title": "Design review", "start": "2026-03-02T10:00", "end": "2026-03-02T11:30",
         "timezone": "Europe/Paris", "attendees": ["ana@example.com", "bo@example.org"], "location": "Room 2"}


calendar = started(lambda: FakeCalendar(primary_time_zone="Europe/Paris"))


slack = started(lambda: FakeSlack(max_page_size=2))  # Slack may answer fewer items than asked: cursors matter


def runtime(store: DocStore, model: Model, **endpoints: Any) -> Runtime:
    settings = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=30.0,
                        credentials_encryption_key=base64.b64encode(os.urandom(32)).decode(), **endpoints)
    rt = Runtime(settings, store=store, model=model, dispatcher=RecordingDispatcher())
    rt.users.put_user(UserRecord(uid=UID, trust_level="supervised"))
    return rt


def test_event_create_needs_approval_then_inserts_exactly_once(calendar: FakeCalendar, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("calendar_event_create", EVENT)), text_turn("Booked the review.")])
    rt = runtime(store, model, calendar_api_base_url=calendar.base_url)
    rt.connectors().vault.put(UID, "google", IntegrationTokens(access_token=calendar.token))

    result = start(rt, "Book the design review on Monday at 10 with Ana and Bo")
    assert result.status == "awaiting_confirmation" and result.approval is not None
    assert result.approval.preview == (
        'Create calendar event "Design review": Mon 2 Mar 2026, 10:00-11:30 (Europe/Paris) at Room 2; '
        "attendees ana@example.com, bo@example.org (they get an invitation)")
    assert calendar.requests == []
    assert [a.data["tool"] for a in store.query(Query(f"users/{UID}/agentApprovals"))] == ["calendar_event_create"]

    decide(rt.services, rt.dispatcher, UID, ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver(rt, copies=3)  # the resume message redelivered

    [insert] = calendar.requests
    assert (insert.method, insert.path) == ("POST", "/calendar/v3/calendars/primary/events")
    assert insert.param("sendUpdates") == "all"
    (action,) = rt.runs.list_actions(result.run_id)
    assert insert.json == {"id": event_id_for(action.action_id), "summary": "Design review",
                           "start": {"dateTime": "2026-03-02T10:00:00+01:00", "timeZone": "Europe/Paris"},
                           "end": {"dateTime": "2026-03-02T11:30:00+01:00", "timeZone": "Europe/Paris"},
                           "attendees": [{"email": "ana@example.com"}, {"email": "bo@example.org"}],
                           "location": "Room 2"}
    assert [e["summary"] for e in calendar.calendars["primary"].events.values()] == ["Design review"]
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    (action,) = rt.runs.list_actions(result.run_id)
    assert (action.status, action.attempts, action.side_effect, action.idempotent) == ("completed", 1, True, True)
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response["created"] is True
    assert told.response["event"]["start"] == "2026-03-02T10:00:00+01:00"
    audit = [a.data for a in store.query(Query("audit")) if a.data.get("kind") == "side_effect_result"]
    assert [a["decision"] for a in audit] == ["success"]
    model.assert_complete()


def test_slack_read_runs_without_approval_and_its_trimmed_page_reaches_the_model(
        slack: FakeSlack, store: DocStore) -> None:
    for i in range(5):
        slack.add_channel(f"C000000{i}", f"chan-{i}")
    for i in range(1, 7):
        slack.add_message("C0000004", text=f"update {i}", user=f"U{i}", ts=f"17000000{i:02d}.000100")
    slack.add_message("C0000004", text="z" * 3000, user="U7", ts="1700000007.000100")
    model = ScriptedModel([calls_turn(call("slack_read", {"channel": "#chan-4", "limit": 5})),
                           text_turn("Here is what happened in #chan-4.")])
    rt = runtime(store, model, slack_api_base_url=slack.base_url)
    rt.connectors().vault.put(UID, "slack", IntegrationTokens(access_token=slack.token, team_id="T1"))

    result = start(rt, "What is new in #chan-4?")

    assert result.status == "completed" and result.approval is None
    assert store.query(Query(f"users/{UID}/agentApprovals")) == []
    # Both calls followed Slack's cursors: the channel is on the third page, the newest five
    # messages span three pages of two.
    assert [(r.method, r.form.get("cursor")) for r in slack.requests] == [
        ("conversations.list", None), ("conversations.list", cursor_for(2)), ("conversations.list", cursor_for(4)),
        ("conversations.history", None), ("conversations.history", cursor_for(2)),
        ("conversations.history", cursor_for(4))]
    (action,) = rt.runs.list_actions(result.run_id)
    assert (action.status, action.side_effect, action.approval_id) == ("completed", False, None)
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None
    out = told.response
    assert out["channel"] == "C0000004" and out["count"] == 5
    assert [m["user"] for m in out["messages"]] == ["U3", "U4", "U5", "U6", "U7"]  # oldest first
    assert out["messages"][-1]["truncated"] is True
    assert out["messages"][-1]["text"].endswith("… [trimmed: 3000 characters in all]")
    assert len(out["messages"][-1]["text"]) < 1600
    assert out["note"] == "older messages exist; only the latest 5 are shown; long messages were trimmed"
    model.assert_complete()
