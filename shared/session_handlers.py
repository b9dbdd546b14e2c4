"""The use cases behind ``functions/sessions.py``: parse, call ``shared.plans.sessions``, render."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from shared.errors import Unprocessable
from shared.plan_views import Plan, plan_body
from shared.plans import sessions as engine
from shared.plans import unit
from shared.plans.contracts import (
    CancelRequest,
    ConfirmRequest,
    CreateSessionRequest,
    RefineRequest,
    SessionAccepted,
    SessionCreated,
    SessionsList,
    SessionSummary,
    SessionView,
)
from shared.plans.views import created, session_view
from shared.responses import ResponseBody
from shared.state.docstore import PreconditionFailed
from shared.state.limits_repo import commit_guarded
from shared.state.plan_records import SessionStatus
from shared.web import parse_model

if TYPE_CHECKING:
    from shared.limits import DeferredRequest
    from shared.runtime import Runtime



class RefineResponse(ResponseBody):
    """``POST /api/agent/sessions/{id}/refine``: the revised plan, in the one plan shape."""

    ok: bool = True
    sessionId: str
    status: SessionStatus
    plan: Plan


def keyed_session_id(uid: str, idempotency_key: str) -> str:
    """The session an ``Idempotency-Key`` names: the caller's own (another user's key of the same
    name is another session), so a repeat finds it with one read and a race creates it once."""
    return "ses_" + hashlib.sha256(f"{uid}\n{idempotency_key}".encode()).hexdigest()[:32]


def _replayed(rt: Runtime, uid: str, session_id: str, fingerprint: str) -> SessionCreated | None:
    """The session a repeated key created (as it is now), or None; another body is a 422."""
    got = rt.sessions.get(session_id)
    if got is None or got[0].uid != uid:
        return None
    session = got[0]
    if session.request_fingerprint and session.request_fingerprint != fingerprint:
        raise Unprocessable("this Idempotency-Key was used with a different request body; use a new key for a "
                            "new session", code="IDEMPOTENCY_KEY_REUSED", details={"sessionId": session_id})
    return created(session, unit.read(rt.sessions, rt.runs, session).tasks)


def create(rt: Runtime, uid: str, body: Any, idempotency_key: str | None = None,
           deferred: DeferredRequest | None = None) -> tuple[SessionCreated, bool]:
    """A new session and its proposed plan, and whether it was one a repeated Idempotency-Key had
    created already (nothing is planned again then). ``deferred``: the request's count, read with
    the start's other documents and committed before the planning call (issue 33)."""
    req = parse_model(CreateSessionRequest, body)
    session_id = fingerprint = None
    if idempotency_key:
        session_id, fingerprint = keyed_session_id(uid, idempotency_key), req.fingerprint()
        replay = _replayed(rt, uid, session_id, fingerprint)
        if replay is not None:
            return replay, True
    # The documents of both limit checks, the request counter and the user's stamps (its webhooks
    # of ``session.*``) in one round trip (issue 33).
    users = rt.services.users
    batch = rt.limits.read_for_start(uid, "sessions", also=[*users.stamp_paths(uid),
                                                            *(deferred.paths() if deferred else [])])
    if deferred is not None:  # counted before anything else of the start, as any request is
        commit_guarded([deferred.guard(batch)], rt.store.commit, what="the request counter")
        deferred.committed()
    stamps = users.stamps(uid, batch)
    rt.limits.check_daily_tokens(uid, batch=batch)  # new model work: before the planning call (docs/limits.md)
    services = rt.services
    deadline = engine.parse_deadline(services, req.deadline)
    tools = engine.check_tools(services, uid, req.tools)
    context = None
    if req.repoUrl:
        from shared.plans.repo_context import repo_context

        context = repo_context(services.connectors() if services.connectors else None, uid, req.repoUrl)
    try:
        outcome = engine.start_planning(services, rt.sessions, uid, req.prompt, deadline=deadline,
                                        repo_url=req.repoUrl, tools=tools, repo_context=context,
                                        keep_workspaces=req.keepWorkspaces, batch=batch, budget_usd=req.budgetUsd,
                                        session_id=session_id, request_fingerprint=fingerprint, stamps=stamps)
    except PreconditionFailed:
        # The same key's other request created it meanwhile (a client's retry racing the first).
        if session_id is None or fingerprint is None or (replay := _replayed(rt, uid, session_id, fingerprint)) is None:
            raise
        return replay, True
    return created(outcome.session, outcome.tasks), False


def list_sessions(rt: Runtime, uid: str, limit: int, cursor: str | None = None) -> SessionsList:
    page = rt.sessions.page_for(uid, limit, cursor)
    return SessionsList(sessions=[SessionSummary(sessionId=s.session_id, status=s.status, prompt=s.prompt[:500],
                                                 deadline=s.deadline, planVersion=s.plan_version,
                                                 createdAt=s.created_at)
                                  for s in page.items], nextCursor=page.next_cursor)


def refine(rt: Runtime, uid: str, session_id: str, body: Any) -> RefineResponse:
    req = parse_model(RefineRequest, body)
    rt.limits.check_daily_tokens(uid)
    outcome = engine.refine_plan(rt.services, rt.sessions, uid, session_id, req.message)
    return RefineResponse(sessionId=session_id, status=outcome.session.status,
                          plan=plan_body(outcome.session.plan_version, outcome.tasks))


def confirm(rt: Runtime, uid: str, session_id: str, body: Any) -> SessionAccepted:
    req = parse_model(ConfirmRequest, body)
    rt.limits.check_daily_tokens(uid)  # confirming starts the execution's model calls
    session = engine.confirm(rt.services, rt.sessions, uid, session_id, req.planVersion)
    return SessionAccepted(sessionId=session_id, status=session.status)


def cancel(rt: Runtime, uid: str, session_id: str, body: Any) -> SessionAccepted:
    req = parse_model(CancelRequest, body)
    session = engine.cancel(rt.services, rt.sessions, uid, session_id, reason=req.reason)
    return SessionAccepted(sessionId=session_id, status=session.status, cancelRequested=session.cancel_requested)


def view(rt: Runtime, uid: str, session_id: str) -> SessionView:
    session, _ = rt.sessions.get_for(uid, session_id)
    return session_view(rt.sessions, rt.runs, rt.services.usage, session)
