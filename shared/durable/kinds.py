"""The message kinds the runtime publishes, and the outbox entry ids derived from them."""

from __future__ import annotations

RESUME = "resume"
"""A decided approval: continue the unit (its outbox entry is named by the approval id)."""
CONTINUE = "continue"
"""A unit yielded its invocation: the next invocation continues it."""
DEQUEUE = "dequeue"
"""A run queued on a busy thread: start it if its turn came (docs/run-control.md)."""
DELIVER = "deliver"
"""A signed HTTP delivery (a webhook): make its next attempt (``shared/delivery``)."""
SCHEDULE_TICK = "schedule_tick"
"""A minute of the schedules' clock (Cloud Scheduler; ``make dev``'s ticker): fire what is due."""
SCHEDULE_FIRE = "schedule_fire"
"""One occurrence of a schedule: start its run (once: the occurrence is its Idempotency-Key)."""
SWEEP = "sweep"
"""Periodic recovery of every registered kind (Cloud Scheduler, ``make dev``'s thread)."""


def plan_entry_id(session_id: str) -> str:
    """The outbox entry of a plan's ``resume`` message to the run that started it (its parent),
    recorded by the plan's final commit (``shared/plans/parent.py``)."""
    return f"plan-{session_id}"


def continue_entry_id(unit_id: str, steps: int) -> str:
    """The outbox entry of a unit's yield after ``steps`` steps (one per yield)."""
    return f"{CONTINUE}-{unit_id}-{steps:05d}"
