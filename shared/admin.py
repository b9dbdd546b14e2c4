"""The admin API for the backend (issue 35): read and change a user's trust level, mail allowlist
and per-user limits without writing the store directly.

Only a principal with the admin role may call it (``Principal.is_admin``: in production a Google
service account of the stack config's ``agent-runtime:admin.serviceAccounts`` (``ADMIN_SERVICE_ACCOUNTS``,
calling with its Google ID token) or a uid of ``ADMIN_UIDS``; ``make dev``'s ``dev-admin:<name>`` token); anyone
else gets 403 ``ADMIN_ONLY``. Every change is audited (``audit/{id}``, kind ``admin_change``: who,
which user, the fields before and after).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator
from pydantic.alias_generators import to_snake

from shared.errors import Forbidden, InvalidInput
from shared.ids import new_id
from shared.responses import ResponseBody
from shared.state.records import AuditRecord, TrustLevel, UserLimits, UserRecord
from shared.web import parse_model
from shared.wire import INTEGRAL

if TYPE_CHECKING:
    from shared.auth import Principal
    from shared.runtime import Runtime

EMAIL = r"^[^@\s]+@[^@\s]+$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class ProfilePatch(_Strict):
    # Each address is checked as the document says (the pattern was only in the schema: "not-an-email" was stored).
    emailAllowlist: list[Annotated[str, Field(min_length=3, max_length=320, pattern=EMAIL)]] | None = Field(
        default=None, max_length=200)
    displayName: str | None = Field(default=None, max_length=200)
    about: str | None = Field(default=None, max_length=4000)
    timezone: str | None = Field(default=None, max_length=64, description="an IANA name, e.g. Europe/Paris")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {value[:64]!r} (an IANA name, e.g. Europe/Paris)") from None
        return value


class LimitsPatch(_Strict):
    """A user's own limits (absent or null: the deployment's; 0: off for this user)."""

    activeRuns: Annotated[int, Strict(), Field(ge=0, le=10_000), INTEGRAL] | None = None
    activeSessions: Annotated[int, Strict(), Field(ge=0, le=10_000), INTEGRAL] | None = None
    dailyTokens: Annotated[int, Strict(), Field(ge=0, le=10**12), INTEGRAL] | None = None
    dailyBudgetUsd: float | None = Field(default=None, ge=0, le=1_000_000, description=(
        "the user's money cap per UTC day (docs/budgets.md); needs BUDGET_USER_DAILY_USD on"))
    monthlyBudgetUsd: float | None = Field(default=None, ge=0, le=1_000_000, description=(
        "the user's money cap per UTC month; needs BUDGET_USER_MONTHLY_USD on"))


BUDGET_SETTINGS = {"dailyBudgetUsd": ("budget_user_daily_usd", "BUDGET_USER_DAILY_USD"),
                   "monthlyBudgetUsd": ("budget_user_monthly_usd", "BUDGET_USER_MONTHLY_USD")}
"""A user's money cap applies where the deployment's cap of the period is on (0 turns it off for
everyone and costs nothing per model call); setting one where it is off is refused, not ignored."""


class UserPatch(_Strict):
    """``PATCH /api/admin/users/{uid}``: the fields given are changed, the others kept."""

    trustLevel: TrustLevel | None = None
    profile: ProfilePatch | None = None
    limits: LimitsPatch | None = None


class AdminUser(ResponseBody):
    ok: bool = True
    uid: str
    trustLevel: Literal["supervised", "delegated", "autonomous"]
    profile: dict[str, Any]
    limits: dict[str, int | float | None] = Field(description="the user's own limits (null: the deployment's)")


def require_admin(rt: Runtime, principal: Principal) -> None:
    if not principal.is_admin(rt.settings.admin_uids, rt.settings.admin_service_accounts):
        raise Forbidden("this route is for the backend's admin principal only", code="ADMIN_ONLY")


def _view(user: UserRecord) -> AdminUser:
    profile = user.profile.model_dump(mode="json", by_alias=True)
    return AdminUser(uid=user.uid, trustLevel=user.trust_level, profile=profile,
                     limits=user.limits.model_dump(mode="json", by_alias=True))


def get_user(rt: Runtime, principal: Principal, uid: str) -> AdminUser:
    require_admin(rt, principal)
    return _view(rt.users.get_user(uid))


def patch_user(rt: Runtime, principal: Principal, uid: str, body: Any) -> AdminUser:
    """Apply the patch (400 naming a bad field, nothing written), store the user and audit it."""
    require_admin(rt, principal)
    patch = parse_model(UserPatch, body)
    user = rt.users.get_user(uid)
    before = user.to_doc()
    if patch.trustLevel is not None:
        user.trust_level = patch.trustLevel
    if patch.profile is not None:
        given = patch.profile.model_dump(exclude_unset=True)
        user.profile = user.profile.model_copy(update={
            "email_allowlist" if k == "emailAllowlist" else "display_name" if k == "displayName" else k: v
            for k, v in given.items()})
    if patch.limits is not None:
        given = patch.limits.model_dump(exclude_unset=True)
        for name, (setting, env) in BUDGET_SETTINGS.items():
            if given.get(name) and not getattr(rt.settings, setting):
                raise InvalidInput(f"limits.{name}: this deployment has no per-user cap of that period ({env} is 0),"
                                   " so a user's own would not apply", code="BUDGET_CAP_OFF",
                                   details={"field": f"limits.{name}", "setting": env})
        current = user.limits.model_dump()
        current.update({to_snake(k): v for k, v in given.items()})
        user.limits = UserLimits(**current)
    audit = AuditRecord(audit_id=new_id("aud"), uid=uid, kind="admin_change", actor=principal.uid,
                        reason="PATCH /api/admin/users", args_before=before, args_after=user.to_doc())
    rt.users.put_user(user, audit=rt.runs.audit_write(audit))
    return _view(user)
