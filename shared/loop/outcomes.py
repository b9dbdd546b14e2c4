"""What one step of the loop decided (as openai-agents' run_steps): small tagged dataclasses.

The step never commits a stop itself; the host of the unit of work acts on the outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from shared.failures import FailureCode
from shared.state.records import ActionRecord, ActOutcome


@dataclass(frozen=True)
class NextStepRunAgain:
    """The step's tool calls were answered: commit it and call the model again."""

    outcomes: tuple[ActOutcome, ...] = ()
    """How each call of the answered turn ended, in call order (``ok``, ``error``, ``rejected``, ``unknown``)."""


@dataclass(frozen=True)
class NextStepFinalOutput:
    text: str


@dataclass(frozen=True)
class NextStepInterruption:
    """Some calls of the model turn at ``turn_index`` need a person's decision."""

    turn_index: int
    waiting: list[ActionRecord]

    @property
    def approval_ids(self) -> list[str]:
        return [a.approval_id for a in self.waiting if a.approval_id]


@dataclass(frozen=True)
class NextStepYield:
    """The invocation's budget is spent: commit, publish a ``continue`` message and stop."""

    reason: Literal["steps", "time"]


@dataclass(frozen=True)
class NextStepFailed:
    code: FailureCode
    message: str


@dataclass(frozen=True)
class NextStepLost:
    """Another invocation moved the unit (its commit won): this one stops without writing."""


StepOutcome = (NextStepRunAgain | NextStepFinalOutput | NextStepInterruption | NextStepYield | NextStepFailed
               | NextStepLost)
StopOutcome = NextStepFinalOutput | NextStepInterruption | NextStepYield | NextStepFailed
BudgetSpent = Literal["steps", "time"]
Settled = NextStepRunAgain | NextStepFinalOutput
"""What the loop's step ended with when the host may take a step of its own after it."""
HostStep = Callable[[], StepOutcome]
"""A step of the host's own (e.g. a plan's reflection on the act): the loop takes it like its own."""
