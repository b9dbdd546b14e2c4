"""Why a unit of work (a run, later a plan session or task) failed: every code, declared once.

Each member is documented in docs/failure-codes.md (a test keeps the two in step). Codes are
strings on the wire (``error.code`` of a result, the ``code`` of an ``error`` event).
"""

from __future__ import annotations

from enum import StrEnum


class FailureCode(StrEnum):
    STEP_LIMIT = "STEP_LIMIT"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    MODEL_TIMEOUT = "MODEL_TIMEOUT"
    MODEL_ERROR = "MODEL_ERROR"
    MALFORMED_MODEL_OUTPUT = "MALFORMED_MODEL_OUTPUT"
    TOO_MANY_TOOL_CALLS = "TOO_MANY_TOOL_CALLS"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    INVALID_TOOL_ARGS = "INVALID_TOOL_ARGS"
    INCONSISTENT_STATE = "INCONSISTENT_STATE"
    SUPERSEDED = "SUPERSEDED"
    APPROVAL_EXPIRED = "APPROVAL_EXPIRED"
    UNKNOWN_HOST = "UNKNOWN_HOST"
    CANCELLED = "CANCELLED"
    MALFORMED_PLAN = "MALFORMED_PLAN"
    ACT_LIMIT = "ACT_LIMIT"
    PLAN_TOO_LARGE = "PLAN_TOO_LARGE"
    TASK_FAILED = "TASK_FAILED"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    TOOL_CALL_LIMIT = "TOOL_CALL_LIMIT"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    INTERNAL = "INTERNAL"
    RUN_TAKEN_OVER = "RUN_TAKEN_OVER"
    """Not stored: a live stream's last event when another invocation took its run over."""
