"""Scheduled runs (docs/run-control.md, "Schedules"): ticks through the router (the path Cloud
Scheduler's messages and ``make dev``'s ticker take), on both real stores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.agent.schedules import ScheduleRequest, Schedules, ScheduleSession, tick_message
from shared.durable.dispatcher import RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.errors import InvalidInput
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime
from shared.schedules.cron import next_after, parse_cron, zone
from tests.agent.conftest import MakeRuntime
from tests.messages import deliver
from tests.plans.support import Script, model

START = datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC).timestamp()
"""Noon UTC the day before Europe/Paris moves its clocks forward (the ticks cross the change)."""
HOUR = 3600.0


def pump(rt: Runtime) -> list[WorkMessage]:
    handled: list[WorkMessage] = []
    deliver(rt, handled.append)
    return handled


def hourly_ticks(rt: Runtime, hours: int, *, twice: int, again: int) -> None:
    """A tick each hour after START (tick ``twice`` delivered twice: one fire per hour), then the
    fire ``again`` delivered a second time (its occurrence has its run or session already)."""
    fires: list[WorkMessage] = []
    for hour in range(1, hours + 1):
        tick = tick_message(START + hour * HOUR)
        rt.router.handle(tick)
        if hour == twice:
            rt.router.handle(tick)  # the same tick delivered twice
        fires.extend(m for m in pump(rt) if m.kind == "schedule_fire")
    assert len(fires) == hours
    rt.router.handle(fires[again])
    pump(rt)


def test_24_hourly_ticks_one_delivered_twice_start_24_runs(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(FunctionModel(lambda r: text_turn("Good morning.")))
    schedules = Schedules(rt.services)
    body = schedules.put("alice", "hourly", ScheduleRequest(cron="0 * * * *", timezone="Europe/Paris",
                                                           prompt="What is new?"), at=START)
    assert body.nextRunAt == START - 30 + HOUR / 2 + HOUR / 2  # 13:00 UTC = 14:00 in Paris
    hourly_ticks(rt, 24, twice=7, again=3)
    runs = schedules.runs("alice", "hourly").runs
    assert len(runs) == 24 and len({r.runId for r in runs}) == 24
    assert [r.status for r in runs] == ["completed"] * 24
    occurrences = sorted(r.occurrence for r in runs)
    assert occurrences == [START - 30 + h * HOUR for h in range(1, 25)]
    assert len(rt.runs.list_runs_for("alice", 100)) == 24
    assert rt.services.outbox.repo.all() == []
    assert schedules.get("alice", "hourly").nextRunAt == START - 30 + 25 * HOUR


def test_a_schedule_on_a_thread_enqueues_and_names_are_per_user(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(FunctionModel(lambda r: text_turn("ok")))
    schedules = Schedules(rt.services)
    schedules.put("alice", "daily", ScheduleRequest(cron="30 8 * * *", prompt="Brief me.", threadId="brief"),
                  at=START)
    assert schedules.get("bob", "daily").declared is False
    assert schedules.runs("bob", "daily").runs == []
    rt.router.handle(tick_message(START + 24 * HOUR))
    pump(rt)
    (run,) = schedules.runs("alice", "daily").runs
    assert rt.runs.get_run(run.runId).run.thread_id == "brief"  # type: ignore[union-attr]
    assert schedules.delete("alice", "daily") and not schedules.delete("alice", "daily")


def test_a_session_template_creates_one_plan_session_per_occurrence(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(model(Script()), limit_active_sessions=6)  # each stays awaiting confirmation
    schedules = Schedules(rt.services)
    template = ScheduleSession(prompt="Summarise my notes", ttlS=7200, tools=["search_memory"])
    body = schedules.put("alice", "notes", ScheduleRequest(cron="0 * * * *", session=template), at=START)
    assert body.prompt is None and body.session == template
    assert schedules.get("alice", "notes").session == template  # as stored
    hourly_ticks(rt, 6, twice=3, again=2)
    listed = schedules.runs("alice", "notes").runs
    assert len(listed) == 6 and len({r.sessionId for r in listed}) == 6
    assert {r.runId for r in listed} == {None} and {r.status for r in listed} == {"awaiting_confirmation"}
    sessions = rt.sessions.page_for("alice", 100, None).items
    assert sorted(s.session_id for s in sessions) == sorted(str(r.sessionId) for r in listed)
    assert {s.prompt for s in sessions} == {"Summarise my notes"}
    assert {s.tools and tuple(s.tools) for s in sessions} == {("search_memory",)}
    assert all(s.deadline - s.created_at == pytest.approx(7200, abs=5) for s in sessions)
    runs = rt.runs.list_runs_for("alice", 100)  # no chat run: the plan sessions' own (issue 27)
    assert sorted(r.run_id for r in runs) == sorted(s.run_id or "" for s in sessions)
    assert {(r.host, r.status) for r in runs} == {("plan", "awaiting_confirmation")}
    assert rt.services.outbox.repo.all() == []
    rt.router.handle(tick_message(START + 7 * HOUR))  # the user's limit on active sessions: refused
    pump(rt)
    assert len(schedules.runs("alice", "notes").runs) == 6


def test_a_schedule_takes_a_prompt_or_a_session_template(make_runtime: MakeRuntime) -> None:
    schedules = Schedules(make_runtime(model(Script())).services)
    template = ScheduleSession(prompt="Plan my week")
    for request in (ScheduleRequest(cron="0 8 * * *"),
                    ScheduleRequest(cron="0 8 * * *", prompt="hi", session=template),
                    ScheduleRequest(cron="0 8 * * *", session=template, threadId="t1")):
        with pytest.raises(InvalidInput) as err:
            schedules.put("alice", "weekly", request)
        assert err.value.code == "INVALID_SCHEDULE"
    with pytest.raises(InvalidInput) as err:
        schedules.put("alice", "weekly", ScheduleRequest(cron="0 8 * * *", session=ScheduleSession(
            prompt="Plan my week", tools=["no_such_tool"])))
    assert err.value.code == "UNKNOWN_TOOLS"
    assert schedules.get("alice", "weekly").declared is False  # nothing written


def test_cron_expressions_and_time_zones() -> None:
    paris = zone("Europe/Paris")
    weekdays = parse_cron("30 9 * * 1-5")
    saturday = datetime(2026, 11, 28, 10, 0, tzinfo=UTC).timestamp()
    monday = datetime.fromtimestamp(next_after(weekdays, paris, saturday), paris)
    assert (monday.isoweekday(), monday.hour, monday.minute) == (1, 9, 30)
    # 02:30 does not exist in Paris on 2026-03-29: that day is skipped
    gap = next_after(parse_cron("30 2 * * *"), paris, datetime(2026, 3, 28, 12, tzinfo=UTC).timestamp())
    assert datetime.fromtimestamp(gap, paris).day == 30
    assert next_after(parse_cron("*/15 * * * *"), zone("UTC"), 0.0) == 900.0
    for bad in ("* * * *", "60 * * * *", "a * * * *", "*/0 * * * *"):
        with pytest.raises(InvalidInput):
            parse_cron(bad)
    with pytest.raises(InvalidInput):
        zone("Mars/Olympus")


def test_make_devs_ticker_publishes_a_tick_per_minute_through_the_dispatcher(make_runtime: MakeRuntime) -> None:
    from devserver import start_schedule_ticker

    rt = make_runtime(FunctionModel(lambda r: text_turn("ok")))
    Schedules(rt.services).put("alice", "soon", ScheduleRequest(cron="* * * * *", prompt="Ping."), at=START)
    stop = start_schedule_ticker(rt, clock=lambda: START + 90)  # a minute after the first occurrence
    try:
        d = rt.dispatcher
        assert isinstance(d, RecordingDispatcher)
        for _ in range(100):
            if d.messages:
                break
            stop.wait(0.05)
        (tick,) = d.take()
        assert tick.kind == "schedule_tick"
        rt.router.handle(tick)
        pump(rt)
    finally:
        stop.set()
    (run,) = Schedules(rt.services).runs("alice", "soon").runs
    assert run.status == "completed" and run.occurrence == START - 30 + 60


def test_a_session_template_over_http(make_runtime: MakeRuntime) -> None:
    from devserver import create_app
    from shared.runtime import set_runtime

    rt = make_runtime(model(Script()))
    set_runtime(rt)
    try:
        client = create_app().test_client()
        alice = {"Authorization": "Bearer dev:alice"}
        ok = client.put("/api/agent/schedules/weekly", headers=alice, json={
            "cron": "0 8 * * 1", "timezone": "Europe/Paris", "session": {"prompt": "Plan my week", "ttlS": 3600}})
        assert ok.status_code == 200, ok.get_json()
        assert ok.get_json()["session"]["prompt"] == "Plan my week" and ok.get_json().get("prompt") is None
        both = client.put("/api/agent/schedules/weekly", headers=alice, json={
            "cron": "0 8 * * 1", "prompt": "hi", "session": {"prompt": "Plan my week"}})
        assert both.status_code == 400 and both.get_json()["error"]["code"] == "INVALID_SCHEDULE"
        extra = client.put("/api/agent/schedules/weekly", headers=alice, json={
            "cron": "0 8 * * 1", "session": {"prompt": "Plan my week", "deadline": "2030-01-01T00:00:00Z"}})
        assert extra.status_code == 400  # a template has ttlS, not an absolute deadline
        as_text = client.put("/api/agent/schedules/weekly", headers=alice, json={
            "cron": "0 8 * * 1", "session": {"prompt": "Plan my week", "ttlS": "7200"}})
        assert as_text.status_code == 400  # the document's integer, not a string of digits
        got = client.get("/api/agent/schedules/weekly", headers=alice).get_json()
        assert got["session"]["ttlS"] == 3600  # the refused PUTs changed nothing
        whole = client.put("/api/agent/schedules/weekly", headers=alice, json={
            "cron": "0 8 * * 1", "session": {"prompt": "Plan my week", "ttlS": 7200.0}})
        assert whole.status_code == 200, whole.get_json()  # JSON Schema's integer: 7200.0 is one
        assert whole.get_json()["session"]["ttlS"] == 7200
    finally:
        set_runtime(None)
