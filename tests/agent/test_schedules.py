"""Scheduled runs (docs/run-control.md, "Schedules"): ticks through the router (the path Cloud
Scheduler's messages and ``make dev``'s ticker take), on both real stores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.agent.schedules import ScheduleRequest, Schedules, tick_message
from shared.durable.dispatcher import RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.errors import InvalidInput
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime
from shared.schedules.cron import next_after, parse_cron, zone
from tests.agent.conftest import MakeRuntime

START = datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC).timestamp()
"""Noon UTC the day before Europe/Paris moves its clocks forward (the ticks cross the change)."""
HOUR = 3600.0


def pump(rt: Runtime) -> list[WorkMessage]:
    d = rt.dispatcher
    assert isinstance(d, RecordingDispatcher)
    handled: list[WorkMessage] = []
    while batch := d.take():
        for message in batch:
            rt.router.handle(message)
            handled.append(message)
    return handled


def test_24_hourly_ticks_one_delivered_twice_start_24_runs(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(FunctionModel(lambda r: text_turn("Good morning.")))
    schedules = Schedules(rt.services)
    body = schedules.put("alice", "hourly", ScheduleRequest(cron="0 * * * *", timezone="Europe/Paris",
                                                           prompt="What is new?"), at=START)
    assert body.nextRunAt == START - 30 + HOUR / 2 + HOUR / 2  # 13:00 UTC = 14:00 in Paris
    fires: list[WorkMessage] = []
    for hour in range(1, 25):
        tick = tick_message(START + hour * HOUR)
        rt.router.handle(tick)
        if hour == 7:
            rt.router.handle(tick)  # the same tick delivered twice
        handled = pump(rt)
        fires.extend(m for m in handled if m.kind == "schedule_fire")
    assert len(fires) == 24
    rt.router.handle(fires[3])  # a fire message delivered again: the occurrence has its run
    pump(rt)
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
