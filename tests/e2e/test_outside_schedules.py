"""Schedules as a user leaves them running (session 2026-11-26d outside trial,
docs/session-notes/2026-11-26d/issue-33p.md).

A schedule every minute whose prompt pauses for an approval the user does not give: each
occurrence's run stays active, and from the eleventh the user's ``LIMIT_ACTIVE_RUNS`` refuses the
next. That refusal (``TOO_MANY_ACTIVE_RUNS``; also ``DAILY_TOKEN_LIMIT``) escaped the fire handler:
``make dev`` logged "inline delivery failed" with a stack trace every minute, and on Pub/Sub the
message failed, to be redelivered and retried, so an occurrence could start hours late once a run
ended. A session template's occurrence refused by the limits already created nothing and was
logged; a prompt's now does the same: nothing started, a warning naming the code, the message done.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from shared.agent.schedules import ScheduleRequest, Schedules, tick_message
from shared.durable.messages import WorkMessage
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import install
from tests.messages import deliver

START = 1_795_000_000.0
MINUTE = 60.0


def _asks_approval(request: ModelRequest) -> Turn:
    if any(p.function_response for p in request.turns[-1].parts):
        return text_turn("saved")
    return calls_turn(call("save_memory", {"text": "I like schedules"}))


@pytest.fixture
def runtime(store: DocStore) -> Iterator[Runtime]:
    yield install(store, FunctionModel(_asks_approval), limit_active_runs=2)
    set_runtime(None)


def test_an_occurrence_refused_by_the_users_limits_starts_nothing_and_is_not_retried(
        runtime: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    schedules = Schedules(runtime.services)
    schedules.put("alice", "every", ScheduleRequest(cron="* * * * *", prompt="Remember that I like schedules"),
                  at=START)
    fires: list[WorkMessage] = []
    with caplog.at_level(logging.INFO):
        for minute in range(1, 4):
            runtime.router.handle(tick_message(START + minute * MINUTE))
            deliver(runtime, lambda m: fires.append(m) if m.kind == "schedule_fire" else None)
    assert len(fires) == 3
    runs = schedules.runs("alice", "every").runs
    assert len(runs) == 2 and {r.status for r in runs} == {"awaiting_confirmation"}  # the third: refused
    refused = [r.getMessage() for r in caplog.records if "scheduled run was refused" in r.getMessage()]
    assert refused == ["a scheduled run was refused: TOO_MANY_ACTIVE_RUNS"], refused
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    runtime.router.handle(fires[-1])  # delivered again (Pub/Sub may): refused again, nothing raised
    assert len(schedules.runs("alice", "every").runs) == 2
    assert runtime.services.outbox.repo.all() == []
