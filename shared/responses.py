"""Response bodies of the HTTP API: every route renders one of these models (the OpenAPI document
is generated from them), never a hand-built dict. Pydantic only, so any function may import it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class ResponseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


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
