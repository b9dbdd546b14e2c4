"""True outcomes after a crash (issue 14 item 4): the real loop, the real stores and the real client
libraries against the local fakes of Gmail, Calendar and GitHub, with the process "dying" at a
chosen commit of the approved call's resume.

- crash *after* the side effect (before the commit recording its result): recovery asks the
  service, finds it (Gmail ``Message-ID``, GitHub marker) or repeats it harmlessly (Calendar's
  event id, memory's document id), and records it as done: the service holds exactly one;
- crash *before* the side effect (right after the claim): recovery finds nothing and runs it once;
- a tool that cannot tell (``calendar_event_update``) keeps today's ``unknown``; so does a
  reconcilable tool whose service cannot be asked at that moment.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from bench.instrument import Crash, CrashAt
from devfakes.calendar import FakeCalendar, at
from devfakes.github import FakeGitHub
from devfakes.google import Fail, FakeGoogle
from shared.agent.approvals import decide
from shared.api import ApproveRequest
from shared.connectors import IntegrationTokens
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Query
from shared.state.records import UserRecord
from tests.connectors.gmail_support import fresh_tokens, google_settings
from tests.connectors.loop_support import start
from tests.messages import deliver_published as deliver

UID = "alice"
REPO = "octo-org/hello-world"


AFTER_SIDE_EFFECT = ("before", 2)
"""A resume's commits: 1 claims the run and the approved action together (issue 33; then the tool
runs), 2 records the result. Dying before commit 2 applies: the side effect happened, nothing
recorded it."""
BEFORE_SIDE_EFFECT = ("after", 1)
"""Dying right after the action's claim applied: the tool never ran."""


@dataclass
class Services:
    google: FakeGoogle
    calendar: FakeCalendar
    github: FakeGitHub

    def count(self, tool: str) -> int:
        """How many of what ``tool`` makes the service holds (the side effect we must not repeat)."""
        repo = self.github.repos[REPO]
        return {"gmail_send": lambda: len(self.google.sent), "gmail_reply": lambda: len(self.google.sent),
                "gmail_draft_create": lambda: len(self.google.drafts),
                "calendar_event_create": lambda: len(self.calendar.calendars["primary"].events),
                "github_issue_create": lambda: sum(1 for i in repo.items.values() if i["kind"] == "issue"),
                "github_pull_create": lambda: sum(1 for i in repo.items.values() if i["kind"] == "pull"),
                "github_comment_create": lambda: len(repo.comments)}[tool]()


@pytest.fixture
def services() -> Iterator[Services]:
    with FakeGoogle() as google, FakeCalendar(token=google.access_token) as calendar, FakeGitHub() as github:
        google.add_message("t1", sender="bob@example.com", to="alice@example.com", subject="Lunch", text="Friday?")
        github.add_repo(REPO, files={"README.md": b"hi"}, branches={"fix": {"README.md": b"fixed"}})
        github.add_issue(REPO, "Flaky test")
        yield Services(google, calendar, github)


CASES: dict[str, dict[str, Any]] = {
    "gmail_send": {"to": ["bob@example.com"], "subject": "Lunch on Friday", "body": "Noon?"},
    "gmail_reply": {"thread_id": "t1", "to": ["bob@example.com"], "subject": "Lunch", "body": "Yes, noon."},
    "gmail_draft_create": {"to": ["bob@example.com"], "subject": "Draft", "body": "Later."},
    "calendar_event_create": {"title": "Design review", "start": "2026-03-02T10:00", "end": "2026-03-02T11:00",
                              "timezone": "Europe/Paris", "attendees": ["ana@example.com"]},
    "github_issue_create": {"repo": REPO, "title": "Tests fail on 3.13", "body": "See the log."},
    "github_pull_create": {"repo": REPO, "title": "Fix the README", "head": "fix", "base": "main"},
    "github_comment_create": {"repo": REPO, "number": 1, "body": "Looking into it."},
}
RECOVERY = {"calendar_event_create": ("retry", "retry")}
"""The recovery audit per tool (after, before); the rest ask the service."""


def crashed_run(store: DocStore, services: Services, tool: str, args: dict[str, Any], crash: tuple[str, int],
                ) -> tuple[Runtime, str, ScriptedModel]:
    """A supervised run asks for ``tool``, it is approved, and its resume dies at ``crash``."""
    chaos = CrashAt(store)
    model = ScriptedModel([calls_turn(call(tool, args)), text_turn("Done.")])
    settings = google_settings(services.google, calendar_api_base_url=services.calendar.base_url,
                               github_api_base_url=services.github.base_url, lease_ttl_s=0.2)
    rt = Runtime(settings, store=chaos.store, model=model, dispatcher=RecordingDispatcher())  # type: ignore[arg-type]
    rt.users.put_user(UserRecord(uid=UID, trust_level="supervised"))
    vault = rt.connectors().vault
    vault.put(UID, "google", fresh_tokens(services.google))
    vault.put(UID, "github", IntegrationTokens(access_token=services.github.token, scopes=["repo"]))
    result = start(rt, f"Please use {tool}")
    assert result.status == "awaiting_confirmation" and result.approval is not None
    decide(rt.services, rt.dispatcher, UID, ApproveRequest(approvalId=result.approval.id, decision="approve"))
    chaos.arm(*crash)
    with pytest.raises(Crash):
        deliver(rt, copies=1)
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "executing"  # cut off: nothing recorded its outcome
    return rt, result.run_id, model


def recover(rt: Runtime) -> None:
    time.sleep(0.3)  # the dead invocation's lease (0.2 s) expires
    assert rt.router.sweep()["recovered"] == 1


def recovery_audits(store: DocStore, run_id: str) -> list[str]:
    return [d.data["decision"] for d in store.query(Query("audit"))
            if d.data.get("runId") == run_id and d.data["kind"] == "recovery"]


def tool_results(rt: Runtime, run_id: str) -> list[dict[str, Any]]:
    return [e for e in rt.runs.list_events(run_id) if e["type"] == "tool_result"]


@pytest.mark.parametrize("tool", sorted(CASES))
def test_a_side_effect_done_before_the_crash_is_recorded_as_done_never_repeated(
        store: DocStore, services: Services, tool: str) -> None:
    before = services.count(tool)
    rt, run_id, model = crashed_run(store, services, tool, CASES[tool], AFTER_SIDE_EFFECT)
    made = services.count(tool)
    assert made == before + 1  # it happened before the crash

    recover(rt)

    assert services.count(tool) == made  # not repeated
    (action,) = rt.runs.list_actions(run_id)
    assert (action.status, action.outcome) == ("completed", "success")
    assert recovery_audits(store, run_id) == [RECOVERY.get(tool, ("reconciled_done",))[0]]
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response == action.result and "outcome" not in told.response
    [event] = tool_results(rt, run_id)
    assert event["status"] == "completed" and event["output"] == action.result
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.status == "completed"


@pytest.mark.parametrize("tool", sorted(CASES))
def test_a_side_effect_cut_off_before_it_happened_runs_exactly_once(
        store: DocStore, services: Services, tool: str) -> None:
    rt, run_id, _ = crashed_run(store, services, tool, CASES[tool], BEFORE_SIDE_EFFECT)
    before = services.count(tool)

    recover(rt)

    assert services.count(tool) == before + 1
    (action,) = rt.runs.list_actions(run_id)
    assert (action.status, action.outcome, action.attempts) == ("completed", "success", 2)
    assert recovery_audits(store, run_id) == [RECOVERY.get(tool, ("", "reconciled_not_done"))[1]]
    [event] = tool_results(rt, run_id)
    assert event["status"] == "completed"


def test_the_found_result_is_the_one_the_call_would_have_returned(store: DocStore, services: Services) -> None:
    rt, run_id, _ = crashed_run(store, services, "gmail_reply", CASES["gmail_reply"], AFTER_SIDE_EFFECT)
    recover(rt)
    (sent,) = services.google.sent
    assert sent.thread_id == "t1" and sent.message["In-Reply-To"]
    (action,) = rt.runs.list_actions(run_id)
    assert action.result == {"sent": True, "messageId": sent.id, "threadId": "t1"}
    assert sent.message["Message-ID"] == f"<agent-runtime.{action.action_id}@example.com>"


def test_memory_written_before_the_crash_is_one_memory(store: DocStore, services: Services) -> None:
    rt, run_id, _ = crashed_run(store, services, "save_memory", {"text": "Alice likes tea."}, AFTER_SIDE_EFFECT)
    recover(rt)
    memories = rt.users.list_memories(UID)
    (action,) = rt.runs.list_actions(run_id)
    assert [(m.id, m.text) for m in memories] == [(f"m-{action.action_id}", "Alice likes tea.")]
    assert (action.status, recovery_audits(store, run_id)) == ("completed", ["retry"])


def test_a_tool_that_cannot_tell_keeps_the_outcome_unknown(store: DocStore, services: Services) -> None:
    event = services.calendar.add_event("primary", summary="Sync", start=at("2026-03-02T10:00", "UTC"),
                                        end=at("2026-03-02T11:00", "UTC"))
    rt, run_id, model = crashed_run(store, services, "calendar_event_update",
                                       {"event_id": event["id"], "title": "Sync (moved)"}, AFTER_SIDE_EFFECT)
    recover(rt)
    patches = [r for r in services.calendar.requests if r.method == "PATCH"]
    assert len(patches) == 1  # never repeated
    (action,) = rt.runs.list_actions(run_id)
    assert (action.status, action.outcome) == ("failed", "unknown")
    assert recovery_audits(store, run_id) == ["unknown"]
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response["outcome"] == "unknown"


def test_a_service_that_cannot_be_asked_leaves_the_outcome_unknown_and_repeats_nothing(
        store: DocStore, services: Services) -> None:
    rt, run_id, _ = crashed_run(store, services, "gmail_send", CASES["gmail_send"], AFTER_SIDE_EFFECT)
    services.google.fail(Fail(403, method="GET", path="/gmail/v1/users/me/messages"))
    recover(rt)
    assert len(services.google.sent) == 1
    (action,) = rt.runs.list_actions(run_id)
    assert (action.status, action.outcome) == ("failed", "unknown")
    assert action.error is not None and "(checking with the service failed: ToolError)" in action.error
    assert recovery_audits(store, run_id) == ["unknown"]

