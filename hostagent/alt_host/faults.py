"""The alternative host's fault switches: ``KIND[:TOOL[:TIMES[:TEXT]]]`` as on the reference host
(docs/host-protocol.md lists the kinds), plus faults of its own:

- ``hide_listing``: the browse screen lists no film until a search was made (the agent must find
  the film through the search tool);
- ``missing_reply_to``: the ``tool.result`` of the matching call carries no ``replyTo`` (breaks the
  protocol's reply pairing).

TOOL names the tool a fault applies to (any when empty or ``*``; for
``unknown_tool_after_schema_change`` the stage just entered); TIMES how often it fires (the MiB of
padding for ``oversized_frame``); TEXT the words of ``goal_change`` and ``injected_text``.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("drop_state_update", "delay_state_update", "unknown_tool_after_schema_change", "invalid_params_first",
         "tool_execution_failed", "goal_change", "injected_text", "malformed_frame", "unknown_type", "wrong_version",
         "binary_frame", "invalid_tool_schema", "oversized_frame", "close_mid_call", "hide_listing",
         "missing_reply_to")
_NEEDS_TEXT = ("goal_change", "injected_text")


@dataclass
class Switch:
    kind: str
    target: str | None = None
    times: int = 1
    text: str | None = None
    fired: int = 0

    def applies(self, target: str) -> bool:
        budget = 1 if self.kind == "oversized_frame" else self.times
        return self.fired < budget and self.target in (None, target)


def switch(spec: str) -> Switch:
    """Parse ``KIND[:TOOL[:TIMES[:TEXT]]]`` (ValueError naming the problem)."""
    fields = spec.strip().split(":", 3)
    kind = fields[0]
    if kind not in KINDS:
        raise ValueError(f"unknown fault {kind!r} (known: {', '.join(KINDS)})")
    target = fields[1] if len(fields) > 1 and fields[1] not in ("", "*") else None
    raw_times = fields[2] if len(fields) > 2 and fields[2] else "1"
    if not raw_times.isdigit() or int(raw_times) < 1:
        raise ValueError(f"fault {spec!r}: TIMES must be a positive integer")
    text = fields[3] if len(fields) > 3 and fields[3] else None
    if kind in _NEEDS_TEXT and text is None:
        raise ValueError(f"fault {kind} needs TEXT ({kind}:TOOL:1:TEXT)")
    return Switch(kind, target, int(raw_times), text)
