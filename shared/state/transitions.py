"""Status transitions of runs and actions (seed 001 section 5), in one table each.

Every status change goes through :func:`move_run` / :func:`move_action`; a change the table does
not allow raises :class:`IllegalTransition` (a bug, never a user error). Staying in a status is
always allowed. The conditional commits of the repositories make each transition happen once.
"""

from __future__ import annotations

from shared.errors import AgentRuntimeError
from shared.state.records import ActionRecord, ActionStatus, RunRecord, RunStatus

_ENDS = ("completed", "failed", "rejected", "deadline_exceeded", "cancelled")
"""A run's ends: a plan's run ends with its session's status (``rejected``: every task ended and the
user refused acts one needed; ``deadline_exceeded``, ``cancelled``), a chat run ``completed`` or ``failed``."""
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    "queued": frozenset({"planning", "failed", "cancelled"}),
    "planning": frozenset({"executing", "awaiting_confirmation", *_ENDS}),
    "executing": frozenset({"planning", "awaiting_confirmation", *_ENDS}),
    "awaiting_confirmation": frozenset({"executing", "planning", "failed", "deadline_exceeded", "cancelled"}),
    **{end: frozenset() for end in _ENDS},
}

ACTION_TRANSITIONS: dict[str, frozenset[str]] = {
    "planned": frozenset({"awaiting_confirmation", "executing", "failed", "rejected"}),
    "awaiting_confirmation": frozenset({"approved", "rejected"}),
    "approved": frozenset({"executing", "failed", "rejected"}),
    # An idempotent tool cut off by a crash goes back to planned/approved and runs again.
    "executing": frozenset({"completed", "failed", "planned", "approved", "awaiting_confirmation"}),
    # (-> awaiting_confirmation: a virtual tool waits for a child unit, e.g. the plan it started.)
    "completed": frozenset(),
    "failed": frozenset(),
    "rejected": frozenset(),
}


class IllegalTransition(AgentRuntimeError):
    """A status change the transition table does not allow."""


def move_run(run: RunRecord, to: RunStatus) -> None:
    if to != run.status and to not in RUN_TRANSITIONS[run.status]:
        raise IllegalTransition(f"run {run.run_id}: {run.status} -> {to} is not a valid transition")
    run.status = to


def move_action(action: ActionRecord, to: ActionStatus) -> None:
    if to != action.status and to not in ACTION_TRANSITIONS[action.status]:
        raise IllegalTransition(f"action {action.action_id}: {action.status} -> {to} is not a valid transition")
    action.status = to
