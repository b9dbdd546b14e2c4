"""Response bodies of the HTTP API: every route renders one of these models (the OpenAPI document
is generated from them), never a hand-built dict. Pydantic only, so any function may import it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.state.statuses import RunStatus


class ResponseBody(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class PageBody(ResponseBody):
    """One page of a list (shared/state/pages.py): ``nextCursor`` is always there, ``null`` on the
    last page."""

    nextCursor: str | None = Field(description="pass as cursor for the next page; null on the last page")

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "nextCursor": self.nextCursor}


class ErrorBody(ResponseBody):
    code: str
    message: str
    details: dict[str, Any] | None = None


class ErrorResponse(ResponseBody):
    ok: Literal[False] = False
    error: ErrorBody


class ApproveResponse(ResponseBody):
    ok: bool = True
    runId: str
    approvalId: str
    status: str
    decision: str
    arguments: dict[str, Any] | None = None
    """Approved with edits: the arguments the call runs with."""


class RemovedResponse(ResponseBody):
    """``DELETE`` of one of the caller's named objects: ``removed`` is false when there was none."""

    ok: bool = True
    name: str
    removed: bool


class CancelRunResponse(ResponseBody):
    """``POST /api/agent/runs/{runId}/cancel``: the run as the cancel left it."""

    ok: bool = True
    runId: str
    status: RunStatus
    cancelling: bool = Field(description="true: the run stops at its next step boundary (follow its events); "
                                         "false: it has ended (cancelled)")
