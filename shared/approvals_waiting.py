"""The approvals-waiting gauge (issue 30, docs/observability.md "Metrics and alerts").

Every recovery sweep (the scheduler's ``sweep`` message, ``Router.sweep``) counts the approvals
that wait for a person: the pending approvals of the runs paused for a decision (a chat run's tool
call, a plan session's act, a budget approval), and logs them as one line::

    {"logger": "agent_runtime.approvals", "message": "approvals waiting", "approvalsWaiting": 3,
     "runsWaiting": 2, "oldestWaitingS": 512.4, "capped": false}

also when nothing waits, so the gauge goes back to 0. Cloud Monitoring reads it as the log-based
metric ``agent_approvals_waiting`` (``infra/agent_infra/monitoring.py``, its latest value per
sweep: a gauge). One query of at most :data:`COUNT_LIMIT` runs per sweep; beyond, the figures are a
lower bound and ``capped`` says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from shared.state.runs_repo import RunsRepo

log = logging.getLogger("agent_runtime.approvals")

COUNT_LIMIT = 1000
MESSAGE = "approvals waiting"


def report(runs: RunsRepo, clock: Callable[[], float] = time.time, limit: int = COUNT_LIMIT) -> int:
    """Count what waits for a person and log the gauge's line; returns the approvals waiting."""
    waiting = runs.waiting_for_people(limit)
    approvals = sum(n for n, _ in waiting)
    oldest = round(max(0.0, clock() - min(at for _, at in waiting)), 1) if waiting else 0.0
    log.info(MESSAGE, extra={"fields": {"approvalsWaiting": approvals, "runsWaiting": len(waiting),
                                        "oldestWaitingS": oldest, "capped": len(waiting) >= limit}})
    return approvals
