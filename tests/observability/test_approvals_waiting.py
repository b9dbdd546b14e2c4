"""Issue 30, "Metrics and alerts": the approvals-waiting gauge. Every recovery sweep logs how many
approvals wait for a person (the pending approvals of runs paused for a decision), also 0, and
Cloud Monitoring's log-based metric ``agent_approvals_waiting`` reads that line (infra test:
infra/tests/test_monitoring.py). Both stores."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from shared.api import RunRequest
from shared.approvals_waiting import MESSAGE
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from tests.budgets.test_budgets import decide, runtime
from tests.plans.test_sessions_http import deliver


def gauge(rt: Runtime, caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="agent_runtime.approvals"):
        rt.router.sweep()
    [line] = [r for r in caplog.records if r.name == "agent_runtime.approvals" and r.getMessage() == MESSAGE]
    return dict(line.fields)  # type: ignore[attr-defined]


def test_the_sweep_logs_the_approvals_waiting_for_a_person(docstore: DocStore,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    rt, _ = runtime(docstore)
    assert gauge(rt, caplog) == {"approvalsWaiting": 0, "runsWaiting": 0, "oldestWaitingS": 0.0, "capped": False}
    paused = []
    for i in range(3):  # a budget too small for the first call: each run waits on one budget approval
        started = rt.agent.start("alice", RunRequest(prompt=f"count w{i}", budgetUsd=0.0001))
        result = rt.agent.run(rt.agent.context(started))
        assert result.status == "awaiting_confirmation" and result.approval is not None
        paused.append(result)
    started = rt.agent.start("bob", RunRequest(prompt="count w3"))  # no budget: it never waits
    assert rt.agent.run(rt.agent.context(started)).status == "completed"
    first = gauge(rt, caplog)
    assert first["approvalsWaiting"] == 3 and first["runsWaiting"] == 3 and first["capped"] is False
    assert first["oldestWaitingS"] >= 0
    decide(rt, paused[0].approval.id, "reject")  # decided: the run ends, nothing waits for it any more
    deliver(rt)
    assert gauge(rt, caplog)["approvalsWaiting"] == 2
    decide(rt, paused[1].approval.id, "approve")  # raised; the budget stops it again later: waits again
    deliver(rt)
    snap = rt.runs.get_run(paused[1].run_id)
    assert snap is not None
    waiting_after = 2 if snap.run.status == "awaiting_confirmation" else 1
    assert gauge(rt, caplog)["approvalsWaiting"] == waiting_after


def test_the_gauge_says_when_it_counted_only_part(docstore: DocStore, caplog: pytest.LogCaptureFixture) -> None:
    from shared.approvals_waiting import report

    rt, _ = runtime(docstore)
    for i in range(2):
        started = rt.agent.start("alice", RunRequest(prompt=f"count l{i}", budgetUsd=0.0001))
        rt.agent.run(rt.agent.context(started))
    with caplog.at_level(logging.INFO, logger="agent_runtime.approvals"):
        assert report(rt.runs, limit=1) == 1  # the cap of the count: a lower bound, flagged ``capped``
    assert caplog.records[-1].fields["capped"] is True  # type: ignore[attr-defined]
    assert report(rt.runs, clock=lambda: 10**10) == 2


def test_a_plan_awaiting_its_confirmation_waits_on_nobody(docstore: DocStore, caplog: pytest.LogCaptureFixture) -> None:
    """A plan session's run exists from its creation in ``awaiting_confirmation`` (issue 27) but asks
    no one (its confirmation is the session's own): it is not counted; a run paused on an approval
    is, as its only waiting run."""
    from shared import session_handlers
    from shared.durable.dispatcher import RecordingDispatcher
    from shared.models.scripted import FunctionModel
    from tests.agent.conftest import make_settings
    from tests.e2e.test_authz_matrix import _model

    rt = Runtime(make_settings(), store=docstore, model=FunctionModel(_model), dispatcher=RecordingDispatcher())
    created, _ = session_handlers.create(rt, "alice", {"prompt": "plan a trip"})
    session, _ = rt.sessions.get_for("alice", created.sessionId)
    assert session.run_id is not None
    plan_run = rt.runs.get_run(session.run_id)
    assert plan_run is not None and plan_run.run.status == "awaiting_confirmation"
    assert gauge(rt, caplog) == {"approvalsWaiting": 0, "runsWaiting": 0, "oldestWaitingS": 0.0, "capped": False}
    started = rt.agent.start("alice", RunRequest(prompt="remember the trip"))
    paused = rt.agent.run(rt.agent.context(started))
    assert paused.status == "awaiting_confirmation" and paused.approval is not None
    counted = gauge(rt, caplog)
    assert counted["approvalsWaiting"] == 1 and counted["runsWaiting"] == 1, counted
