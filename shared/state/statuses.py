"""The closed vocabularies of runs, actions, approvals and acts, in a module of their own (a leaf):
response models name them without loading the records (a route's cold start, issue 20)."""

from __future__ import annotations

from typing import Literal

RunStatus = Literal["queued", "planning", "awaiting_confirmation", "executing", "completed", "failed", "rejected",
                    "deadline_exceeded", "cancelled"]
"""``planning`` means the loop is working on the run (calling the model); it is not a plan session's
status. Plan sessions have their own states (docs/firestore-layout.md says which word means what).
The run that executes a plan session ends with the session's status (``rejected``,
``deadline_exceeded``, ``cancelled`` too; docs/plan-sessions.md, "Statuses"): the two always agree."""
ActionStatus = Literal["planned", "awaiting_confirmation", "approved", "executing", "completed", "failed",
                       "rejected"]
ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "cancelled"]
"""``cancelled``: closed undecided because its plan session was cancelled."""
ActOutcome = Literal["ok", "error", "rejected", "unknown", "done"]
"""The outcome of one act of a plan task, one word from the act to the model's observation, the
session's log, its events and the console: ``ok`` (the tool answered), ``error`` (it failed),
``rejected`` (the user or the policy refused it), ``unknown`` (the runtime stopped while it ran, a
side effect that is never run again), ``done`` (a text answer that ends the task)."""

TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"completed", "failed", "rejected", "deadline_exceeded",
                                                   "cancelled"})
TERMINAL_ACTION_STATUSES: frozenset[str] = frozenset({"completed", "failed", "rejected"})
