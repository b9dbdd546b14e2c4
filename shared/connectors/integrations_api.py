"""The contract of ``/api/integrations/{provider}``: how a backend hands over a user's tokens.

``POST`` stores (replaces) the caller's tokens for ``provider`` (encrypted); ``DELETE`` forgets
them; ``GET`` tells whether it is connected. Answers carry only non-secret metadata, never a token.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator, model_validator

from shared.connectors.credentials import PROVIDERS, IntegrationStatus, IntegrationTokens, Provider
from shared.errors import NotFound
from shared.formats import is_email
from shared.responses import ResponseBody
from shared.wire import (
    INTEGRAL,
    MAX_EPOCH_S,
    NO_WHITESPACE_PATTERN,
    NOT_BLANK_PATTERN,
    WHITESPACE_CLASS,
    UtcTime,
    has_whitespace,
    is_blank,
)

EMAIL_PATTERN = (f"^[^@{WHITESPACE_CLASS}<>(),;:\"\\[\\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                 r"(?:\.[A-Za-z0-9-]+)+$")
"""``shared.formats.is_email`` as a JSON Schema ``pattern``: the same whitespace on both sides
(``shared.wire``), so the document and the server agree on every address."""
_EMAIL = re.compile(EMAIL_PATTERN[:-1] + r"\Z")  # ``$`` would also accept a trailing newline
MAX_SCOPE_CHARS = 300


class ConnectRequest(BaseModel):
    """Body of ``POST /api/integrations/{provider}`` (camelCase, unknown fields refused).

    Give ``expiresAt`` (epoch seconds) or ``expiresIn`` (seconds from now, as OAuth token
    responses say), not both; Google tokens without either are refreshed only after a 401.
    """

    # strict: "3599" is not a number of seconds and 1 is not a token (the document's types hold).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True, json_schema_extra={
        # "not both" in the document too (null counts as absent, as in _expiry)
        "not": {"required": ["expiresAt", "expiresIn"],
                "properties": {"expiresAt": {"type": "number"}, "expiresIn": {"type": "number"}}}})

    access_token: str = Field(alias="accessToken", min_length=1, max_length=8192,
                              json_schema_extra={"pattern": NO_WHITESPACE_PATTERN})
    refresh_token: str | None = Field(default=None, alias="refreshToken", min_length=1, max_length=8192,
                                      json_schema_extra={"pattern": NO_WHITESPACE_PATTERN})
    expires_at: float | None = Field(default=None, alias="expiresAt", gt=0, le=MAX_EPOCH_S)
    expires_in: Annotated[int, Strict(), Field(gt=0, le=366 * 86400), INTEGRAL] | None = Field(
        default=None, alias="expiresIn")
    scopes: list[str] = Field(default_factory=list, max_length=50, json_schema_extra={"items": {
        "type": "string", "minLength": 1, "maxLength": MAX_SCOPE_CHARS, "pattern": NOT_BLANK_PATTERN}})
    account_email: str | None = Field(default=None, alias="accountEmail", max_length=320,
                                      json_schema_extra={"pattern": EMAIL_PATTERN})
    team_id: str | None = Field(default=None, alias="teamId", max_length=64)

    @field_validator("access_token", "refresh_token")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and has_whitespace(value):
            raise ValueError("must be a single token without whitespace")
        return value

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, value: list[str]) -> list[str]:
        if any(is_blank(s) or len(s) > MAX_SCOPE_CHARS for s in value):
            raise ValueError(f"each scope must be a non-blank string of at most {MAX_SCOPE_CHARS} characters")
        return value

    @field_validator("account_email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not (is_email(value) and _EMAIL.match(value)):
            raise ValueError("not an email address")
        return value

    @model_validator(mode="after")
    def _expiry(self) -> ConnectRequest:
        if self.expires_at is not None and self.expires_in is not None:
            raise ValueError("give expiresAt or expiresIn, not both")
        return self

    def tokens(self, now: float | None = None) -> IntegrationTokens:
        expires_at = self.expires_at
        if self.expires_in is not None:
            expires_at = (now if now is not None else time.time()) + self.expires_in
        return IntegrationTokens(access_token=self.access_token, refresh_token=self.refresh_token,
                                 expires_at=expires_at, scopes=self.scopes, account_email=self.account_email,
                                 team_id=self.team_id)


def provider_named(segment: str) -> Provider:
    """The ``{provider}`` of ``/api/integrations/{provider}``; 404 for an unknown provider."""
    for known in PROVIDERS:
        if segment == known:
            return known
    raise NotFound(f"unknown integration {segment[:40]!r}; expected one of {', '.join(PROVIDERS)}",
                   code="UNKNOWN_INTEGRATION")


class IntegrationStatusBody(ResponseBody):
    """Whether the caller has connected ``provider``; never a token."""

    provider: Provider
    connected: bool
    scopes: list[str] = Field(default_factory=list, description="granted scopes (when connected)")
    accountEmail: str | None = None
    expiresAt: UtcTime | None = Field(default=None, description="access token expiry")
    updatedAt: UtcTime | None = Field(default=None, description="when the tokens were stored")


class IntegrationsResponse(ResponseBody):
    """``GET /api/integrations``: every provider's status."""

    ok: bool = True
    integrations: list[IntegrationStatusBody]


class IntegrationResponse(IntegrationStatusBody):
    """``GET`` and ``POST /api/integrations/{provider}``: one connection's status (an object, like
    every answer about one thing)."""

    ok: bool = True


class IntegrationRemovedResponse(ResponseBody):
    """``DELETE /api/integrations/{provider}``: ``removed`` is false when nothing was stored."""

    ok: bool = True
    provider: Provider
    connected: Literal[False] = False
    removed: bool


def status_body(status: IntegrationStatus) -> IntegrationStatusBody:
    if not status.connected:
        return IntegrationStatusBody(provider=status.provider, connected=False)
    return IntegrationStatusBody(provider=status.provider, connected=True, scopes=status.scopes,
                                 accountEmail=status.account_email, expiresAt=status.expires_at,
                                 updatedAt=status.updated_at)


def one_status(status: IntegrationStatus) -> IntegrationResponse:
    """One provider's status as ``GET``/``POST /api/integrations/{provider}`` answer it."""
    return IntegrationResponse.model_validate({**status_body(status).model_dump(), "ok": True})
