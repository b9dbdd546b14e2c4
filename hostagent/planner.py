"""The planner interface (seed 002 §4): what the control loop asks of the rules and LLM planners.

Apart from ``hostagent.plans`` so that the plan data, which memory records, does not depend on
memory or perception (no import cycle, ``tests/hostagent/test_import_cycles.py``).
"""

from __future__ import annotations

from typing import Protocol

from hostagent.memory import AgentMemory
from hostagent.perception import PerceivedContext
from hostagent.plans import NavigationPlan


class Planner(Protocol):
    @property
    def name(self) -> str: ...

    async def plan(self, context: PerceivedContext, memory: AgentMemory) -> NavigationPlan: ...
