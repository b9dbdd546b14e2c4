"""Post-action verification (seed 002 §5, §7): after a successful ``tool.result``, wait (bounded)
for the ``state.updated`` it caused; without one, resync with ``snapshot.get``
(``TIMEOUT_STATE_UPDATE``). Then compare the stage reached with the one the action should have
produced: a different stage is ``DESYNC_DETECTED``.

Stale updates (caused by an action older than the state already known, e.g. one delayed past an
earlier timeout) are logged and skipped while waiting; ``user.message`` and other events stay
queued on the bus for the loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hostagent.event_bus import EventBus
from hostagent.executor import Executor
from hostagent.memory import AgentMemory
from hostagent.perception import observe
from hostagent.plans import PlannedAction
from hostagent.protocol import Envelope
from hostagent.session_log import SessionLog


@dataclass(frozen=True)
class Verification:
    ok: bool
    code: str | None
    """None, ``DESYNC_DETECTED``; ``timed_out`` says whether a snapshot stood in for the update."""
    observed_stage: str | None
    timed_out: bool = False


@dataclass
class Verifier:
    bus: EventBus
    memory: AgentMemory
    executor: Executor
    log: SessionLog
    timeout_s: float

    async def verify(self, call: Envelope, action: PlannedAction, refused_before: int | None = None) -> Verification:
        """``refused_before``: the frames refused before the call went out (a frame refused between its
        result and this wait is the update's place taken, too); default: those refused by now."""
        deadline = time.monotonic() + self.timeout_s
        timed_out = False
        refused = self.bus.refused if refused_before is None else refused_before
        while True:
            remaining = deadline - time.monotonic()
            update = await self.bus.next(lambda e: e.type == "state.updated", timeout=max(0.0, remaining),
                                         refused_before=refused)
            if update is None:
                timed_out = True
                if self.bus.refused > refused:
                    self.log.write("recovery", "snapshot_continue", id=call.id, code="FRAME_REFUSED",
                                   reason=f"a frame that broke the protocol came instead of the state.updated after "
                                          f"{action.tool}'s result; resync with snapshot.get")
                    await self.executor.snapshot(f"FRAME_REFUSED after {call.id}")
                    break
                self.log.write("recovery", "snapshot_continue", id=call.id, code="TIMEOUT_STATE_UPDATE",
                               reason=f"no state.updated within {self.timeout_s:g}s after {action.tool}'s result; "
                                      "resync with snapshot.get")
                await self.executor.snapshot(f"TIMEOUT_STATE_UPDATE after {call.id}")
                break
            seen = observe(update, self.memory)
            self.log.stage = self.memory.working.stage
            if seen == "stale":
                self.log.write("verification", "state.updated", id=update.id, outcome="stale",
                               reason=f"caused by {update.payload.get('cause')}, older than the state already known")
                continue
            break
        stage = self.memory.working.stage
        expected = action.expectedStage
        if expected is not None and stage != expected:
            self.log.write("verification", "tool.call", id=call.id, outcome="desync", code="DESYNC_DETECTED",
                           reason=f"{action.tool} should have led to stage {expected!r}, the host is at {stage!r}",
                           data={"expectedStage": expected, "observedStage": stage, "timedOut": timed_out})
            return Verification(ok=False, code="DESYNC_DETECTED", observed_stage=stage, timed_out=timed_out)
        self.log.write("verification", "tool.call", id=call.id, outcome="ok",
                       data={"expectedStage": expected, "observedStage": stage, "timedOut": timed_out})
        return Verification(ok=True, code=None, observed_stage=stage, timed_out=timed_out)
