"""``approve``: POST /api/agent/approve -> 202 once the owner's decision is recorded (with edited
``arguments``: the call runs with them); GET /api/agent/approvals/{approvalId} -> the approval, its
call's arguments and their schema (what an edit form needs); POST /api/agent/runs/{runId}/cancel ->
202 (docs/run-control.md)."""

from __future__ import annotations

from collections.abc import Mapping

import flask

from functions.common import caller, starting_caller
from shared.agent.approvals import decide
from shared.api import ApproveRequest
from shared.responses import ApproveResponse
from shared.web import json_response, parse_model, read_json_body


def approve(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    with starting_caller(request) as (rt, uid, counter):  # counted by the decision's commit (issue 33)
        body = parse_model(ApproveRequest, read_json_body(request, rt.settings.max_body_bytes))
        # the runtime's dispatcher, built when first used: a refused decision creates no Pub/Sub client
        decision = decide(rt.services, None, uid, body, counter=counter)
    answer = ApproveResponse(runId=decision.run_id, approvalId=decision.approval_id, decision=decision.decision,
                             status="resume_requested", arguments=decision.arguments)
    return json_response(answer.to_json(), status=202)


def get_approval(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.approval_edits import approval_detail

    rt, uid = caller(request)
    return json_response(approval_detail(rt.services, uid, path["approvalId"]).to_json())


def cancel_run(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.agent.run_handlers import cancel_run as cancel
    from shared.api import CancelRunRequest
    from shared.responses import CancelRunResponse

    rt, uid = caller(request)
    body = parse_model(CancelRunRequest, read_json_body(request, rt.settings.max_body_bytes, optional=True))
    run, cancelling = cancel(rt.agent, uid, path["runId"], reason=body.reason)
    answer = CancelRunResponse(runId=run.run_id, status=run.status, cancelling=cancelling)
    return json_response(answer.to_json(), status=202)
