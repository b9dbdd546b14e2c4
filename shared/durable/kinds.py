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
SWEEP = "sweep"
"""Periodic recovery of every registered kind (Cloud Scheduler, ``make dev``'s thread)."""


def continue_entry_id(unit_id: str, steps: int) -> str:
    """The outbox entry of a unit's yield after ``steps`` steps (one per yield)."""
    return f"{CONTINUE}-{unit_id}-{steps:05d}"
