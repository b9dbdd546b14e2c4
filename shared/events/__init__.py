"""Run events (docs/event-protocol.md), one module per family:

- ``loop.py``: the base ``Event`` and the loop's events (status, deltas, tools, usage, result, ...);
  re-exported here, so ``from shared.events import StatusEvent`` is the usual import;
- ``plan.py``: a plan's progress in the log of the run that executes it;
- ``run.py``: ``RunEvent``, the union of every run event (imports the plan contracts);
- ``session.py``: a plan session's events in the session's words (``/api/agent/sessions/{id}/events``).
"""

from shared.events.loop import (
    AgentStateEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    ResultEvent,
    StatusEvent,
    StreamEndEvent,
    ThoughtDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
    event_to_doc,
)

__all__ = ["AgentStateEvent", "DeltaEvent", "ErrorEvent", "Event", "ResultEvent", "StatusEvent", "StreamEndEvent",
           "ThoughtDeltaEvent", "ToolCallEvent", "ToolResultEvent", "UsageEvent", "event_to_doc"]
