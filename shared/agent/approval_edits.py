"""Approve with edits: the person deciding corrects the call's arguments ("send it, but to bob@").

The edited arguments are checked before the decision is recorded: against the tool's declaration
(a 400 naming each offending field, under ``arguments``) and by the same policy as the model's call
(``shared/policy.py``): an edit cannot do what the user may not (a denied call stays denied). A
virtual tool (answered by the run's host, e.g. ``agent_create_plan``) takes no edits. The decision
transaction (``shared/agent/approvals.py``) then stores them on the action, keeping the model's
arguments beside them, and audits both.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from shared import policy
from shared.errors import InvalidInput, NotFound
from shared.formats import validation_problems
from shared.loop.context import Services
from shared.responses import ResponseBody
from shared.state.records import Approval

EDIT_DENIED = "EDIT_DENIED_BY_POLICY"


def checked_edit(services: Services, uid: str, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` for a call of ``tool_name`` if they may run (the dict as given); else a 400."""
    tool = services.registry_for(uid).get(tool_name)
    if tool is None or tool.host:
        raise InvalidInput(f"the arguments of {tool_name} cannot be edited", code="EDIT_NOT_SUPPORTED",
                           details={"errors": [{"field": "arguments", "message": f"{tool_name} takes no edits"}]})
    try:
        args = tool.args_model.model_validate(arguments)
    except ValidationError as exc:
        errors = [{"field": f"arguments.{field}" if field != "(args)" else "arguments", "message": message}
                  for field, message in validation_problems(exc, root="(args)")]
        raise InvalidInput(f"invalid edited arguments: {', '.join(e['field'] for e in errors)}",
                           code="INVALID_ARGUMENTS", details={"errors": errors}) from None
    decision = policy.decide(tool_name=tool.name, side_effect=tool.side_effect, args=args,
                             user=services.users.get_user(uid),
                             side_effects_enabled=services.settings.side_effects_enabled,
                             recipients=tool.recipients_fn)
    if decision.verdict == "deny":
        raise InvalidInput(f"policy refuses {tool_name} with the edited arguments: {decision.reason}",
                           code=EDIT_DENIED, details={"reason": decision.reason})
    return arguments


def tool_of_pending(services: Services, uid: str, approval_id: str) -> str:
    """The tool an approval is about (404 when the caller has no such approval)."""
    got = services.runs.get_approval(uid, approval_id)
    if got is None:
        raise NotFound(f"approval {approval_id} not found", code="APPROVAL_NOT_FOUND")
    return got[0].tool


class ApprovalDetail(ResponseBody):
    """``GET /api/agent/approvals/{approvalId}``: the approval and what an edit form needs: the
    call's arguments (as they will run), the model's when an approval with edits changed them, and
    the tool's JSON schema of its arguments (absent: the tool takes no edits)."""

    ok: bool = True
    approval: Approval
    arguments: dict[str, Any]
    originalArguments: dict[str, Any] | None = None
    argumentsSchema: dict[str, Any] | None = None


def approval_detail(services: Services, uid: str, approval_id: str) -> ApprovalDetail:
    """The caller's approval with its call's arguments and their schema (404 for anyone else's)."""
    got = services.runs.get_approval(uid, approval_id)
    action = None if got is None else next(
        (a for a in services.runs.list_actions(got[0].run_id) if a.action_id == got[0].action_id), None)
    if got is None or action is None or action.uid != uid:
        raise NotFound(f"approval {approval_id} not found", code="APPROVAL_NOT_FOUND")
    tool = services.registry_for(uid).get(action.tool)
    schema = tool.declaration().parameters if tool is not None and not tool.host else None
    return ApprovalDetail(approval=Approval.of(got[0]), arguments=action.args, originalArguments=action.original_args,
                          argumentsSchema=schema)
