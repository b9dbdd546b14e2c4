"""Tool-call policy as code (seed 001 section 8).

The decision depends only on the tool's declaration, the validated arguments, the user's stored
trust level/allowlist and the kill switch. Nothing from the prompt, the conversation or attached
context reaches this function, so no text can turn an approval-required call into an automatic one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from shared.state.records import UserRecord

Verdict = Literal["allow", "require_approval", "deny"]


@dataclass(frozen=True)
class PolicyDecision:
    verdict: Verdict
    reason: str


RecipientsFn = Callable[[BaseModel], list[str]]
"""For mail-like tools: every recipient (to, cc, bcc) of a call, for the delegated allowlist."""


def decide(*, tool_name: str, side_effect: bool, args: BaseModel, user: UserRecord,
           side_effects_enabled: bool, recipients: RecipientsFn | None = None) -> PolicyDecision:
    if not side_effect:
        return PolicyDecision("allow", "read-only tool")
    if not side_effects_enabled:
        return PolicyDecision("deny", "side effects are disabled by AGENT_SIDE_EFFECTS_ENABLED=false")
    level = user.trust_level
    if level == "autonomous":
        return PolicyDecision("allow", "trust level autonomous allows side effects")
    if level == "delegated" and recipients is not None:
        addrs = [a.strip().lower() for a in recipients(args)]
        allow = {a.strip().lower() for a in user.profile.email_allowlist}
        if addrs and all(a in allow for a in addrs):
            return PolicyDecision("allow", "trust level delegated and every recipient is allowlisted")
        return PolicyDecision("require_approval",
                              f"trust level delegated: {tool_name} has recipients outside the allowlist")
    return PolicyDecision("require_approval", f"trust level {level}: {tool_name} has side effects")
