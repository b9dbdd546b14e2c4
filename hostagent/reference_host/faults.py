"""Switchable faults of the reference host.

A fault is ``KIND[:TOOL[:TIMES[:TEXT]]]`` on the command line (``--fault``), e.g.
``tool_execution_failed:confirm_booking:2`` or ``goal_change:select_showtime:1:Make it Oppenheimer``.
An empty or ``*`` TOOL matches any tool call; TIMES (default 1) is how often it fires.

The faults of seed 002 / issue 12:

- ``drop_state_update``: the ``state.updated`` after a successful call is never sent.
- ``delay_state_update``: that ``state.updated`` is held until the agent's next message has been
  answered (so it always arrives after the agent gave up waiting and resynced), then sent as it
  was: stale, with ``cause`` naming the old call.
- ``unknown_tool_after_schema_change``: the first call after the stage (and so the toolSchema)
  changed is answered ``UNKNOWN_TOOL``; TOOL filters on the new stage's name here, not a tool.
- ``invalid_params_first``: the first attempt of a call is answered ``INVALID_PARAMS``.
- ``tool_execution_failed``: the call is answered ``TOOL_EXECUTION_FAILED`` TIMES times.
- ``goal_change``: after the call's ``tool.result``, a ``user.message`` with TEXT (the user
  changes their mind) comes before the ``state.updated``.
- ``injected_text``: host content carries TEXT, as a page or a listing written by someone else
  would (prompt injection): the call's ``tool.result`` gets ``result.notice`` and the following
  ``state.updated`` ``uiSpec.banner``. Nothing it says may change what the agent's safety policy
  allows.

Bad input for the agent (the reply to the matching call is replaced):

- ``malformed_frame`` (not JSON), ``unknown_type`` (type ``tool.progress``), ``wrong_version``
  (``v: "mvp-0.1"``), ``binary_frame`` (a binary WebSocket frame), ``invalid_tool_schema`` (the
  next ``state.updated`` lists a tool whose ``params`` is not a JSON Schema), ``oversized_frame``
  (the next ``state.updated`` carries TIMES MiB of padding), ``close_mid_call`` (the host closes
  the connection instead of answering).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

FaultKind = Literal[
    "drop_state_update", "delay_state_update", "unknown_tool_after_schema_change", "invalid_params_first",
    "tool_execution_failed", "goal_change", "injected_text",
    "malformed_frame", "unknown_type", "wrong_version", "binary_frame", "invalid_tool_schema", "oversized_frame",
    "close_mid_call",
]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
# Faults whose TIMES is a size, not a count.
_SIZED = frozenset({"oversized_frame"})


@dataclass
class Fault:
    kind: FaultKind
    tool: str | None = None
    times: int = 1
    text: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; one of {', '.join(FAULT_KINDS)}")
        if self.times < 1:
            raise ValueError(f"fault {self.kind}: times must be at least 1")
        if self.kind == "goal_change" and not self.text:
            raise ValueError("fault goal_change needs the user's new text (goal_change:TOOL:1:TEXT)")
        if self.kind == "injected_text" and not self.text:
            raise ValueError("fault injected_text needs the text to plant (injected_text:TOOL:1:TEXT)")
        self.remaining = 1 if self.kind in _SIZED else self.times

    def matches(self, tool: str) -> bool:
        return self.remaining > 0 and (self.tool is None or self.tool == tool)

    def fire(self) -> None:
        self.remaining -= 1

    @property
    def size_bytes(self) -> int:
        return self.times * 1024 * 1024


def parse_fault(spec: str) -> Fault:
    """``KIND[:TOOL[:TIMES[:TEXT]]]`` -> Fault (ValueError naming what is wrong)."""
    kind, _, rest = spec.strip().partition(":")
    tool, _, rest = rest.partition(":")
    times_text, _, text = rest.partition(":")
    try:
        times = int(times_text) if times_text else 1
    except ValueError:
        raise ValueError(f"fault {spec!r}: TIMES must be an integer, got {times_text!r}") from None
    return Fault(kind=kind, tool=None if tool in ("", "*") else tool, times=times,  # type: ignore[arg-type]
                 text=text or None)
