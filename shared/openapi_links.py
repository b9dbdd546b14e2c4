"""OpenAPI links of the HTTP API: how a response's ids feed the next call.

Clients, and the stateful phase of the fuzz test (tests/fuzz), follow them to reach approve, runs
and events with real ids rather than only 404s. :data:`LINKS` maps an operationId (a route of
``shared/routes.py``) to the links of its first success response.
"""

from __future__ import annotations

from typing import Any


def _decide(approval_id: str, decision: str, when: str) -> dict[str, Any]:
    """A link to ``approve`` deciding the approval at JSON pointer ``approval_id`` of the response."""
    return {"operationId": "approve", "description": when,
            "requestBody": {"approvalId": f"$response.body#{approval_id}", "decision": decision}}


run_links: dict[str, Any] = {
    "getRun": {"operationId": "getRun", "parameters": {"runId": "$response.body#/runId"}},
    "getRunEvents": {"operationId": "getRunEvents", "parameters": {"runId": "$response.body#/runId"}},
    "approveAction": _decide("/approval/approvalId", "approve", "when the run waits for approval"),
    "rejectAction": _decide("/approval/approvalId", "reject", "when the run waits for approval"),
    "continueThread": {"operationId": "run", "description": "the next turn of the same thread",
                       "requestBody": {"prompt": "Remember that I like tea",
                                       "threadId": "$response.body#/threadId"}},
}
approve_links = {
    "getRun": {"operationId": "getRun", "parameters": {"runId": "$response.body#/runId"}},
    "followRunEvents": {"operationId": "getRunEvents",
                        "parameters": {"runId": "$response.body#/runId", "follow": "true"}},
    "decideAgain": _decide("/approvalId", "reject", "a second decision: 409"),
}
by_session = {"sessionId": "$response.body#/sessionId"}
session_links = {
    "getSession": {"operationId": "getSession", "parameters": by_session},
    "getSessionEvents": {"operationId": "getSessionEvents", "parameters": by_session},
    "refineSession": {"operationId": "refineSession", "parameters": by_session,
                      "requestBody": {"message": "Also tidy the notes afterwards"}},
    "cancelSession": {"operationId": "cancelSession", "parameters": by_session},
}
created_links = {**session_links, "confirmSession": {
    "operationId": "confirmSession", "parameters": by_session,
    "requestBody": {"planVersion": "$response.body#/plan/version"}}}
refined_links = {**session_links, "confirmSession": {
    "operationId": "confirmSession", "parameters": by_session,
    "requestBody": {"planVersion": "$response.body#/plan/version"}}}
view_links = {
    **session_links,
    "getSessionRun": {"operationId": "getRun", "description": "the session's unit of work (its run, from creation)",
                      "parameters": {"runId": "$response.body#/runId"}},
    "approvePending": _decide("/pendingApprovals/0/approvalId", "approve", "when the session's run waits for approval"),
    "rejectPending": _decide("/pendingApprovals/0/approvalId", "reject", "when the session's run waits for approval"),
}
list_runs_links = {
    "getFirstRun": {"operationId": "getRun", "parameters": {"runId": "$response.body#/runs/0/runId"}},
    "getFirstRunEvents": {"operationId": "getRunEvents", "parameters": {"runId": "$response.body#/runs/0/runId"}},
    "continueNewestThread": {"operationId": "run", "description": "the next turn of the newest run's thread",
                             "requestBody": {"prompt": "Remember that I like tea",
                                             "threadId": "$response.body#/runs/0/threadId"}},
    "approveFirstRun": _decide("/runs/0/approvals/0/approvalId", "approve", "when the newest run waits for approval"),
}
view_run_links = {"approveAction": _decide("/result/approval/approvalId", "approve", "when the run waits for approval")}
inbox_links = {
    "approveFirst": _decide("/approvals/0/approvalId", "approve", "when the newest approval is pending"),
}
list_sessions_links = {"getFirstSession": {"operationId": "getSession",
                                           "parameters": {"sessionId": "$response.body#/sessions/0/sessionId"}}}
first_provider = {"provider": "$response.body#/integrations/0/provider"}
list_integrations_links = {
    "getIntegration": {"operationId": "getIntegration", "parameters": first_provider},
    "connectIntegration": {"operationId": "connectIntegration", "parameters": first_provider},
    "disconnectIntegration": {"operationId": "disconnectIntegration", "parameters": first_provider},
}
integration_links = {
    "getIntegration": {"operationId": "getIntegration", "parameters": {"provider": "$request.path.provider"}},
    "disconnectIntegration": {"operationId": "disconnectIntegration",
                              "parameters": {"provider": "$request.path.provider"}},
}

same_mcp_server = {"name": "$request.path.name"}
mcp_server_links = {
    "getMcpServer": {"operationId": "getMcpServer", "parameters": same_mcp_server},
    "listMcpServerTools": {"operationId": "listMcpServerTools", "parameters": same_mcp_server},
    "disconnectMcpServer": {"operationId": "disconnectMcpServer", "parameters": same_mcp_server},
}

LINKS: dict[str, dict[str, Any]] = {
    "run": run_links,
    "listRuns": list_runs_links,
    "getRun": view_run_links,
    "listSessions": list_sessions_links,
    "createSession": created_links,
    "getSession": view_links,
    "refineSession": refined_links,
    "confirmSession": session_links,
    "approve": approve_links,
    "listApprovals": inbox_links,
    "listIntegrations": list_integrations_links,
    "connectIntegration": integration_links,
    "connectMcpServer": mcp_server_links,
}
