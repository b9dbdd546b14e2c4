"""New features cost nothing when off, and documents per tool step (issue 33), counted, never timed.

The figures are ``bench.features``' (the ``features`` section of ``make bench``): one
``POST /api/agent/run`` of 4 steps through the real HTTP edge and runtime on a real store behind
the counting wrapper (``bench.instrument``), every round trip listed and placed in its phase
(start, between model calls, stop). A feature's round trips are those touching only its
collections. The issue's target is 0 for every feature when off and <= 4 documents per tool step;
where that is NOT met today the value asserted is today's (so that a regression fails and an
improvement must lower the figure here and in docs/benchmarks.md).
"""

from __future__ import annotations

import base64
from typing import Any

from bench.features import (
    FEATURES,
    Run,
    documents_of,
    documents_per_tool_step,
    feature_trips,
    measure_run,
    phases_of,
)
from shared.state.docstore import DocStore

# Round trips of each feature when the user does not use it: start / per tool step / stop.
OFF_ROUND_TRIPS: dict[str, tuple[int, float, int]] = {
    "workspaces": (0, 0.0, 0),
    "webhooks": (0, 0.0, 0),  # free since issue 33's third session: the user's stamps say they have no webhook
    "run_control": (0, 0.0, 0),  # free since issue 33's session 3 (33g): a run nothing was queued behind reads no
    # thread at its stop (a queued run is noted on the active run); the per-step stop check reads nothing since
    # issue 33's session 2 (a stop request is on the run document)
    "a2a": (0, 0.0, 0),  # free since issue 33's session 2: the user's stamps say they have no A2A agent
    "otel": (0, 0.0, 0),
    "budgets": (0, 0.0, 0),
    "mcp": (0, 0.0, 0),  # free since issue 33's session 2: the user's stamps say they have no MCP server
    "agui": (0, 0.0, 0),
}
OFF_DOCUMENTS_WRITTEN: dict[str, int] = {}  # budgets free since issue 33's third session: no month counter (the
# month's spend is the sum of its days' counters); it wrote one per model call before
DOCUMENTS_PER_TOOL_STEP = {"runs": 1.0, "turns": 1.0, "usage": 1.0, "usageDays": 1.0}
"""4 documents per tool step, the target (issue 33's session 4, issue-33m: the step's events and the audit
entries of its answered calls ride in its turns document; 6 before, 7 when the issue was filed, 8 with the
month's counter of the money budgets, issue 30, until issue 33's third session; 7 until issue 33's session 3
(issue-33e) put the actions of a step's answered calls inside its turns document). Reads per step: 0 (1
before issue 33's session 2: run control's thread read)."""


def _off(store: DocStore) -> Run:
    run = measure_run(store)
    assert run.status == "completed", run
    return run


def test_each_feature_off_costs_what_it_costs_today(store: DocStore) -> None:
    run = _off(store)
    phases = phases_of(run)
    assert len(phases["start"]) == 2, phases["start"]  # tests/limits/test_round_trips.py counts these
    for feature in FEATURES:
        trips = feature_trips(feature, phases)
        got = (len(trips["start"]), len(trips["step"]) / 2, len(trips["stop"]))
        assert got == OFF_ROUND_TRIPS[feature.name], (feature.name, trips)
        written = sum(n for c, n in run.docs_written.items() if c in feature.collections)
        written += documents_of(feature, run.paths_written)  # its documents in shared collections (budgets)
        assert written == OFF_DOCUMENTS_WRITTEN.get(feature.name, 0), (feature.name, run.docs_written)
        read = sum(n for c, n in run.docs_read.items() if c in feature.collections)
        read += documents_of(feature, run.paths_read)
        assert read == 0, (feature.name, run.docs_read, run.paths_read)
    # Nothing of a feature that is off is read or written in its own collections besides the above.
    assert not {"workspaces", "deliveries", "a2aTasks", "pushConfigs"} & (set(run.docs_read) | set(run.docs_written))


def test_documents_written_per_tool_step(store: DocStore) -> None:
    run = _off(store)
    assert documents_per_tool_step(run) == DOCUMENTS_PER_TOOL_STEP
    # 0 reads per step: the step's commit only.
    step = phases_of(run)["step"]
    assert [t.split()[0] for t in step] == ["commit"] * 2, step


def test_a_feature_turned_on_shows_in_its_counts(store: DocStore) -> None:
    """The attribution can fail: a user with a webhook makes the stop write a delivery and its
    outbox entry."""
    key = base64.b64encode(bytes(range(32))).decode()

    def webhook(client: Any, rt: Any) -> None:
        resp = client.put("/api/agent/webhooks/bench", json={"url": "http://127.0.0.1:9/hook", "events": ["run.*"]},
                          headers={"Authorization": "Bearer dev:feat-bench"})
        assert resp.status_code in (200, 201), resp.get_json()

    run = measure_run(store, setup=webhook, credentials_encryption_key=key, mcp_allow_private_urls=True)
    hooks = next(f for f in FEATURES if f.name == "webhooks")
    trips = feature_trips(hooks, phases_of(run))
    assert len(trips["stop"]) == 1 and trips["start"] == trips["step"] == [], trips
    assert run.docs_written.get("deliveries") == 1 and run.docs_written.get("outbox", 0) >= 1, run.docs_written


def test_budgets_turned_on_show_in_their_documents(store: DocStore) -> None:
    """Budgets' own document (``limits/budget``, in the collection the limits share) is counted by
    path: 0 off (above), read and written at each model call's reservation when on."""
    run = measure_run(store, body={"budgetUsd": 5.0}, budget_user_daily_usd=50.0)
    budgets = next(f for f in FEATURES if f.name == "budgets")
    assert documents_of(budgets, run.paths_written) >= 4 and documents_of(budgets, run.paths_read) >= 4, run
    assert "usageMonths" not in run.docs_written  # the month's spend is the sum of its days' counters


def test_run_control_reads_the_thread_at_a_stop_only_when_a_run_was_queued_behind(store: DocStore) -> None:
    """Run control is free when unused (above: no thread read at the stop), yet a run queued on the
    thread while the active one runs (here: during its model call, after its start's commit) starts
    when it ends: the queueing transaction notes it on the active run, whose next commit adopts the
    note (``RunsRepo.adopt_stop``), and only then does its end read the thread to start the next."""
    from bench.instrument import InstrumentedStore
    from shared.api import RunRequest
    from shared.auth import LocalAuthenticator
    from shared.durable.dispatcher import RecordingDispatcher
    from shared.models.base import ModelRequest, Turn
    from shared.models.scripted import FunctionModel, text_turn
    from shared.runtime import Runtime
    from tests.agent.conftest import make_settings
    from tests.limits.conftest import OFF
    from tests.messages import deliver

    counted = InstrumentedStore(store)
    queued: list[str] = []
    runtime: list[Runtime] = []

    def answer(request: ModelRequest) -> Turn:
        prompt = request.turns[0].text or ""
        if prompt == "first" and not queued:
            second = runtime[0].agent.start("alice", RunRequest(prompt="second", threadId="rc1",
                                                                multitaskStrategy="enqueue"))
            assert second.outcome.snapshot.run.status == "queued"
            queued.append(second.outcome.snapshot.run.run_id)
        return text_turn(f"done: {prompt}")

    rt = Runtime(make_settings(**OFF), store=counted, model=FunctionModel(answer), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    runtime.append(rt)
    first = rt.agent.start("alice", RunRequest(prompt="first", threadId="rc1"))
    trips = counted.record_trips()
    assert rt.agent.run(rt.agent.context(first)).status == "completed"
    thread_reads = [t for t in trips if t.startswith("get ") and "/threads/rc1" in t and "/" not in t.split("rc1")[1]]
    assert len(thread_reads) == 1, trips  # the stop's read of the queue, because a run waits
    # The queued run's start is published twice (when it is queued, and by this run's end), each
    # reading its outbox entry once (``Outbox.send``).
    assert [t for t in trips if "outbox" in t] == [f"get outbox/dequeue-{queued[0]}", "commit outbox"] * 2, trips
    deliver(rt)
    second = rt.runs.get_run(queued[0])
    assert second is not None and second.run.status == "completed", second
    # The second run had nothing queued behind it: its end read no thread.
    assert not second.run.queued_behind
