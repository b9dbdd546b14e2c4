"""Firestore document paths of the runtime (seed 001 section 9), in one place."""

from __future__ import annotations

import hashlib


def run(run_id: str) -> str:
    return f"runs/{run_id}"


def turns(run_id: str) -> str:
    return f"runs/{run_id}/turns"


def turn(run_id: str, index: int) -> str:
    return f"runs/{run_id}/turns/{index:06d}"


def actions(run_id: str) -> str:
    return f"runs/{run_id}/actions"


def action(run_id: str, action_id: str) -> str:
    return f"runs/{run_id}/actions/{action_id}"


def events(run_id: str) -> str:
    return f"runs/{run_id}/events"


def event(run_id: str, seq: int) -> str:
    return f"runs/{run_id}/events/{seq:08d}"


def threads(uid: str) -> str:
    """The user's threads: a thread id is chosen by the client, so each user has their own."""
    return f"users/{uid}/threads"


def thread(uid: str, thread_id: str) -> str:
    return f"users/{uid}/threads/{thread_id}"


def messages(uid: str, thread_id: str) -> str:
    return f"users/{uid}/threads/{thread_id}/messages"


def message(uid: str, thread_id: str, message_id: str) -> str:
    return f"users/{uid}/threads/{thread_id}/messages/{message_id}"


def shared_threads() -> str:
    """Threads written before issue 35, one collection for every user (``uid`` field): still read
    and continued (a run records which of the two its thread is in, ``threadScope``)."""
    return "threads"


def shared_thread(thread_id: str) -> str:
    return f"threads/{thread_id}"


def shared_messages(thread_id: str) -> str:
    return f"threads/{thread_id}/messages"


def user(uid: str) -> str:
    return f"users/{uid}"


def approvals(uid: str) -> str:
    return f"users/{uid}/agentApprovals"


def approval(uid: str, approval_id: str) -> str:
    return f"users/{uid}/agentApprovals/{approval_id}"


def memories(uid: str) -> str:
    return f"users/{uid}/memories"


def memory(uid: str, memory_id: str) -> str:
    return f"users/{uid}/memories/{memory_id}"


def audit(audit_id: str) -> str:
    return f"audit/{audit_id}"


def idempotency(uid: str, key: str) -> str:
    digest = hashlib.sha256(f"{uid}\x00{key}".encode()).hexdigest()[:40]
    return f"idempotencyKeys/{digest}"


def outbox_entries() -> str:
    return "outbox"


def outbox(entry_id: str) -> str:
    return f"outbox/{entry_id}"


def usage_entries(uid: str) -> str:
    return f"users/{uid}/usage"


def usage_entry(uid: str, entry_id: str) -> str:
    return f"users/{uid}/usage/{entry_id}"


def usage_month(uid: str, month: str) -> str:
    """The user's usage counter of one UTC month (``YYYY-MM``): cost, for the monthly budget."""
    return f"users/{uid}/usageMonths/{month}"


def usage_day(uid: str, day: str) -> str:
    """The user's usage counter of one UTC day (``YYYY-MM-DD``), kept with the ledger."""
    return f"users/{uid}/usageDays/{day}"


def integration(uid: str, provider: str) -> str:
    return f"users/{uid}/integrations/{provider}"


def mcp_servers(uid: str) -> str:
    """The user's own MCP servers (``POST /api/integrations/mcp/{name}``), one document each."""
    return f"users/{uid}/mcpServers"


def mcp_server(uid: str, name: str) -> str:
    return f"users/{uid}/mcpServers/{name}"


def webhooks(uid: str) -> str:
    """The user's webhooks (``PUT /api/agent/webhooks/{name}``), one document each."""
    return f"users/{uid}/webhooks"


def webhook(uid: str, name: str) -> str:
    return f"users/{uid}/webhooks/{name}"


def deliveries() -> str:
    """Signed HTTP deliveries (webhooks; ``shared/delivery``): top level, so the retry sweep
    finds the due ones of every user in one query."""
    return "deliveries"


def delivery(delivery_id: str) -> str:
    return f"deliveries/{delivery_id}"


def schedules() -> str:
    """Users' schedules (``PUT /api/agent/schedules/{name}``): top level (id derived from the user
    and the name), so a tick finds the due ones of every user in one query."""
    return "schedules"


def schedule(schedule_id: str) -> str:
    return f"schedules/{schedule_id}"


def schedule_runs(schedule_id: str) -> str:
    """One document per occurrence that started a run (its id: the occurrence's epoch minute)."""
    return f"schedules/{schedule_id}/runs"


def schedule_run(schedule_id: str, occurrence: str) -> str:
    return f"schedules/{schedule_id}/runs/{occurrence}"


def runs() -> str:
    return "runs"


def sessions() -> str:
    return "sessions"


def session(session_id: str) -> str:
    return f"sessions/{session_id}"


def session_plans(session_id: str) -> str:
    return f"sessions/{session_id}/plans"


def session_plan(session_id: str, version: int) -> str:
    return f"sessions/{session_id}/plans/{version:04d}"


def session_tasks(session_id: str) -> str:
    return f"sessions/{session_id}/tasks"


def task_react(session_id: str, task_id: str) -> str:
    return f"sessions/{session_id}/tasks/{task_id}/react"


def task_react_step(session_id: str, task_id: str, n: int) -> str:
    return f"sessions/{session_id}/tasks/{task_id}/react/{n:05d}"


def session_events(session_id: str) -> str:
    return f"sessions/{session_id}/events"


def templates(uid: str) -> str:
    return f"users/{uid}/templates"


def template(uid: str, template_id: str) -> str:
    return f"users/{uid}/templates/{template_id}"


def projects(uid: str) -> str:
    return f"users/{uid}/projects"


def project(uid: str, project_id: str) -> str:
    return f"users/{uid}/projects/{project_id}"


def project_tasks(uid: str, project_id: str) -> str:
    return f"users/{uid}/projects/{project_id}/tasks"


def project_task(uid: str, project_id: str, task_id: str) -> str:
    return f"users/{uid}/projects/{project_id}/tasks/{task_id}"


def project_documents(uid: str, project_id: str) -> str:
    return f"users/{uid}/projects/{project_id}/documents"


def project_document(uid: str, project_id: str, document_id: str) -> str:
    return f"users/{uid}/projects/{project_id}/documents/{document_id}"


def limit(uid: str, name: str) -> str:
    """A per-user limit's state: ``requests`` (the current minute's count), ``runs`` and ``sessions``
    (the units counted as active), see shared/state/limits_repo.py."""
    return f"users/{uid}/limits/{name}"


def stamps(uid: str) -> str:
    """The version stamps of the user's collections a run's start reads (shared/state/users_repo.py)."""
    return f"users/{uid}/stamps/config"


def workspaces() -> str:
    """Workspaces of the sandbox service (docs/workspaces.md): one record each, owner in ``uid``."""
    return "workspaces"


def workspace(workspace_id: str) -> str:
    return f"workspaces/{workspace_id}"


def a2a_tasks(uid: str) -> str:
    """The user's A2A tasks (``/a2a``): one document per task, named by its run's id."""
    return f"users/{uid}/a2aTasks"


def a2a_task(uid: str, task_id: str) -> str:
    return f"users/{uid}/a2aTasks/{task_id}"


def a2a_push_configs(uid: str, task_id: str) -> str:
    """A task's push notification configurations (their tokens and credentials as given)."""
    return f"users/{uid}/a2aTasks/{task_id}/pushConfigs"


def a2a_push_config(uid: str, task_id: str, config_id: str) -> str:
    return f"users/{uid}/a2aTasks/{task_id}/pushConfigs/{config_id}"


def a2a_agents(uid: str) -> str:
    """The user's own remote A2A agents (``POST /api/integrations/a2a/{name}``), one document each."""
    return f"users/{uid}/a2aAgents"


def a2a_agent(uid: str, name: str) -> str:
    return f"users/{uid}/a2aAgents/{name}"
