"""The route table: every deployed function and every HTTP route, written once.

Everything that used to repeat the routes is derived from :data:`FUNCTIONS` and :data:`ROUTES`:
``main.py``'s entry points, each deployed function's dispatch (``shared/web.py``), the
dev server (``devserver.py``), the ``paths`` of the OpenAPI document (``shared/openapi.py``), the
infra catalogue (``infra/agent_infra/catalog.py``) and the entry-point tests. Adding a route is one
:class:`Route` entry here (and its handler); adding a function is one :class:`Function` entry
(docs/architecture.md, "Adding a route").

Pure data and the standard library only (named tuples: a few times cheaper to define than
dataclasses): ``main.py`` imports this module at cold start, and the infra program (which cannot
import the runtime) loads it by path. Handlers and models are named by import path
(``"module:attribute"``) and loaded on first use, so a deployed function still imports only what
its own requests need.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

Trigger = Literal["http", "pubsub"]
FirestoreAccess = Literal["none", "read", "write"]
SecretName = Literal["gemini", "credentials", "google_oauth"]

MAX_INT64 = 2**63 - 1


def document_id(chars: str, longest: int) -> str:
    """A regular expression of 1 to ``longest`` (at least 2) characters of the class ``chars``
    (which holds ``_``), except the ids Firestore reserves, ``__.*__``: a client-chosen id becomes a
    document id, and reading or writing a reserved one failed there (a 500 on every route that took
    one). Without lookaround: pydantic's regex engine has none. The alternatives: it does not start
    with ``__``, or does not end with ``__``, or is at most 3 characters long."""
    c, d = f"[{chars}]", f"[{chars.replace('_', '')}]"
    return (f"(?:{d}{c}{{0,{longest - 1}}}|_{d}{c}{{0,{longest - 2}}}|{c}{{0,{longest - 1}}}{d}"
            f"|{c}{{0,{longest - 2}}}{d}_|_{{1,3}})")


ID_SEGMENT = document_id("A-Za-z0-9_-", 128)
"""What a ``{name}`` path parameter matches unless the route says otherwise (ids): 1-128 of
``[A-Za-z0-9_-]``, not ``__…__``."""
ANY_SEGMENT = r"[^/]+"
UID_SEGMENT = document_id("A-Za-z0-9_.@-", 128)
NAME_PATTERN = f"^{document_id('A-Za-z0-9_-', 40)}$"
"""A name in the caller's namespace (webhooks, schedules, MCP servers, A2A agents)."""
NAME_RULE = "1-40 characters of A-Z, a-z, 0-9, _ and -, not __…__"
"""A user id (Firebase uids; make dev's ``dev:<uid>`` names)."""
PROVIDER_SEGMENT = r"(?!(?:mcp|a2a)\Z)[^/]+"
"""``/api/integrations/{provider}``: any segment but ``mcp`` and ``a2a`` (the user's MCP servers' and
remote A2A agents' collections)."""
"""One path segment of any content: the handler answers a bad value itself (after authentication)."""


class Function(NamedTuple):
    """One deployed function: an entry point of ``main.py`` implemented by ``functions/<name>.py``,
    and what the infra catalogue needs to deploy it with least privilege.

    ``handler`` is the implementation of an event function (``pubsub``); an HTTP function serves
    the routes whose ``function`` is its name. ``secrets``: the secret-backed settings it reads.
    ``publishes_resume``: it publishes to the resume topic. ``deadline_bound``: it drives the agent
    loop, so its timeout follows the run deadline. ``firestore``: what its code does with the store.
    """

    name: str
    trigger: Trigger = "http"
    secrets: tuple[SecretName, ...] = ()
    publishes_resume: bool = False
    deadline_bound: bool = False
    default_timeout_s: int = 60
    firestore: FirestoreAccess = "write"
    handler: str | None = None
    summary: str = ""
    """What the function is (infra: the Cloud Function's description for an event function)."""


class Reply(NamedTuple):
    """A success response of a route: its status, what it says, and its body: ``model`` (a pydantic
    model, ``"module:Class"``), ``stream`` (NDJSON lines of a component of the OpenAPI document,
    e.g. ``"RunEvent"``; ``sse`` also as Server-Sent Events) or an inline JSON ``schema``."""

    status: int
    description: str
    model: str | None = None
    stream: str | None = None
    sse: bool = False
    schema: Mapping[str, object] | None = None


QueryKind = Literal["integer", "boolean", "enum", "string", "instant"]


class Param(NamedTuple):
    """One query parameter a route takes. The dispatch parses a request's query string by its route's
    ``query`` (``shared/query.py``): a parameter the route does not declare, one given twice or a bad
    value is a 400 ``INVALID_QUERY`` naming it, before the handler runs; the OpenAPI document lists
    the same parameters. ``integer``: ASCII digits within ``minimum..maximum``; ``boolean``:
    true/false/1/0; ``enum``: one of ``values``; ``string``/``instant`` (an RFC 3339 time or a date):
    the handler reads the text. ``default``: the value when absent (``None``: absent)."""

    name: str
    kind: QueryKind
    default: object = None
    minimum: int = 0
    maximum: int = MAX_INT64
    values: tuple[str, ...] = ()
    description: str = ""


def page_limit(default: int = 50, maximum: int = 200) -> Param:
    """``limit``: how many items one page of a list holds."""
    return Param("limit", "integer", default=default, minimum=1, maximum=maximum,
                 description="the most items one page holds")


CURSOR = Param("cursor", "string", description="where the page starts: the nextCursor of the previous page "
                                               "(absent: the first page); 400 INVALID_CURSOR when it is not one")
AFTER = Param("after", "integer", default=0, description="the seq after which events are read")
LAST_EVENT_ID = Param("lastEventId", "integer", description="the same as after, for clients that cannot set the "
                                                            "Last-Event-ID header (it wins over after)")
FOLLOW = Param("follow", "boolean", default=False, description="keep the response open and stream new events")
UNTIL = Param("until", "enum", default="stop", values=("stop", "end"),
              description="with follow: stop (default) ends the follow when the run stops, also at a pause for "
                          "a decision; end follows through pauses (decided elsewhere) until the run ends")


class Route(NamedTuple):
    """One method on one path.

    ``function``: the deployed function that serves it (``None``: only ``make dev`` serves it).
    ``handler``: ``"module:attribute"``, called as ``handler(request, path_params)``; it parses,
    authenticates (unless ``public``), calls ``shared/`` and renders. ``request``: the JSON body's
    model, if the route takes one. ``errors``: the 4xx/5xx statuses it can answer besides 500 and,
    unless ``public``, 429 (documented for every route). ``segments``: a pattern for a path
    parameter other than an id (:data:`ID_SEGMENT`). ``query``: its query parameters.
    """

    method: str
    path: str
    operation_id: str
    function: str | None
    handler: str
    replies: tuple[Reply, ...]
    request: str | None = None
    body_required: bool = True
    """``False``: the request body may be absent (read as ``{}``), e.g. ``cancel``'s optional reason."""
    errors: tuple[int, ...] = ()
    public: bool = False
    description: str | None = None
    segments: Mapping[str, str] = MappingProxyType({})
    query: tuple[Param, ...] = ()
    """The query parameters it takes (:class:`Param`); any other is a 400 ``INVALID_QUERY``."""

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", self.path)


_LOOP_SECRETS: tuple[SecretName, ...] = ("gemini", "credentials", "google_oauth")
"""The functions that run the agent loop execute connector tools (Gmail, Calendar, Slack), so they
read the stored tokens (credentials key) and refresh Google ones (OAuth client secret)."""

FUNCTIONS: tuple[Function, ...] = (
    Function("run", secrets=_LOOP_SECRETS, publishes_resume=True, deadline_bound=True, default_timeout_s=0,
             summary="start a run, drive it to its stop, answer the result"),
    Function("stream", secrets=_LOOP_SECRETS, publishes_resume=True, deadline_bound=True, default_timeout_s=0,
             summary="same, streaming NDJSON events while it works"),
    # Reads runs and events; writes only the caller's request counter (the per-user request limit).
    Function("runs", default_timeout_s=300, summary="the caller's runs; one run; its events; the approvals inbox"),
    # The credentials key: an approval's detail and edited arguments are checked against the tool's
    # declaration, and a user's own MCP servers' tools are listed with their decrypted headers.
    Function("approve", secrets=("credentials",), publishes_resume=True,
             summary="record a decision, publish a resume message (outbox)"),
    Function("resume", trigger="pubsub", secrets=_LOOP_SECRETS, publishes_resume=True, deadline_bound=True,
             default_timeout_s=0, handler="functions.resume:resume",
             summary="Pub/Sub push from the resume topic"),
    # Stateless for goals; writes only the usage ledger entries of its model calls (issue 9).
    Function("goals", secrets=("gemini",), default_timeout_s=120, summary="the goal-planning agent (backend only)"),
    # Stores (encrypted), deletes and reports users' tokens; never refreshes them.
    Function("integrations", secrets=("credentials",), summary="a user's connector tokens"),
    # Plan sessions (seed 004): plans with the model, writes sessions, publishes continue messages.
    # The credentials key: a session's repository context reads the caller's GitHub token (issue 35).
    Function("sessions", secrets=("gemini", "credentials"), publishes_resume=True, deadline_bound=True,
             default_timeout_s=0,
             summary="plan sessions"),
    # The caller's own data: threads and memories, deleting them and runs, export and erasure (issue 35).
    Function("data", default_timeout_s=300,
             summary="the caller's threads and memories; deleting runs, threads and memories; export and erasure"),
    # The admin API for the backend: a user's trust level, mail allowlist and limits (issue 35).
    Function("admin", summary="the admin API: a user's trust level, mail allowlist and limits"),
    # Reads the caller's usage ledger; writes only the caller's request counter.
    Function("usage", summary="the caller's model calls, summed per group"),
    # Lists and destroys the caller's workspaces (records in the store, files in the sandbox service).
    Function("containers", summary="the caller's workspaces of the sandbox service"),
    # The A2A server (docs/a2a.md): messages start and continue runs, like run/stream/approve.
    Function("a2a", secrets=_LOOP_SECRETS, publishes_resume=True, deadline_bound=True, default_timeout_s=0,
             summary="the A2A server (JSON-RPC and HTTP+JSON) and its agent card"),
)

_BODY = (400, 401, 404, 409, 413, 415)
"""A route that reads a JSON body about a caller's object."""

A2A_SEGMENT = r"[^/]{1,256}"
"""An A2A task or configuration id: any segment (the SDK answers a bad one in A2A's words)."""
_A2A_REST = "A2A HTTP+JSON binding (spec 1.0, section 11), answered by the a2a-sdk's REST routes; docs/a2a.md"
_A2A_REPLY = (Reply(200, "the A2A answer (google.rpc errors as the binding says; 4xx for A2A errors)",
                    schema={"type": "object"}),)
_A2A_STREAM = (Reply(200, "Server-Sent Events, each data a StreamResponse (task, message, statusUpdate, "
                          "artifactUpdate)", schema={"type": "string"}),)


def _a2a_params(*names: str) -> tuple[Param, ...]:
    """Query parameters of the A2A binding (spec 1.0 §11.3): the a2a-sdk reads and checks them."""
    return tuple(Param(name, "string", description="as the A2A HTTP+JSON binding defines it") for name in names)


def _a2a(method: str, path: str, op: str, replies: tuple[Reply, ...] = _A2A_REPLY, *,
         body: bool = False, query: tuple[Param, ...] = ()) -> Route:
    return Route(method, path, op, "a2a", "functions.a2a:a2a", replies=replies, body_required=body,
                 errors=(400, 401, 404, 409, 413, 415), description=_A2A_REST,
                 segments={"taskId": A2A_SEGMENT, "configId": A2A_SEGMENT}, query=query)


A2A_ROUTES: tuple[Route, ...] = (
    Route("POST", "/a2a", "a2aJsonRpc", "a2a", "functions.a2a:a2a",
          description="The A2A server's JSON-RPC 2.0 binding (methods SendMessage, SendStreamingMessage, GetTask, "
                      "ListTasks, CancelTask, SubscribeToTask, ...); errors are JSON-RPC errors (docs/a2a.md).",
          replies=(Reply(200, "a JSON-RPC response, or Server-Sent Events for the streaming methods",
                         schema={"type": "object"}),), errors=(401, 413)),
    _a2a("POST", "/a2a/message:send", "a2aSendMessage", body=True),
    _a2a("POST", "/a2a/message:stream", "a2aSendStreamingMessage", _A2A_STREAM, body=True),
    _a2a("GET", "/a2a/tasks", "a2aListTasks",
         query=_a2a_params("contextId", "status", "pageSize", "pageToken", "historyLength", "statusTimestampAfter",
                           "includeArtifacts", "tenant")),
    _a2a("POST", "/a2a/tasks/{taskId}:cancel", "a2aCancelTask"),
    _a2a("GET", "/a2a/tasks/{taskId}:subscribe", "a2aSubscribeToTask", _A2A_STREAM),
    _a2a("POST", "/a2a/tasks/{taskId}:subscribe", "a2aSubscribeToTaskPost", _A2A_STREAM),
    _a2a("POST", "/a2a/tasks/{taskId}/pushNotificationConfigs", "a2aCreatePushConfig", body=True),
    _a2a("GET", "/a2a/tasks/{taskId}/pushNotificationConfigs", "a2aListPushConfigs",
         query=_a2a_params("pageSize", "pageToken", "tenant")),
    _a2a("GET", "/a2a/tasks/{taskId}/pushNotificationConfigs/{configId}", "a2aGetPushConfig"),
    _a2a("DELETE", "/a2a/tasks/{taskId}/pushNotificationConfigs/{configId}", "a2aDeletePushConfig"),
    _a2a("GET", "/a2a/tasks/{taskId}", "a2aGetTask", query=_a2a_params("historyLength", "tenant")),
    _a2a("GET", "/a2a/extendedAgentCard", "a2aExtendedAgentCard"),
    Route("GET", "/.well-known/agent-card.json", "a2aAgentCard", "a2a", "functions.a2a:agent_card", public=True,
          description="The A2A agent card: interfaces (JSON-RPC and HTTP+JSON at /a2a), skills, security schemes.",
          replies=(Reply(200, "the AgentCard (A2A spec 1.0)", schema={"type": "object",
                                                                      "required": ["name", "supportedInterfaces"]}),)),
)


def _endpoint_routes(kind: str, op: str, handler: str, thing: str, things: str, invalid_name: str, *,
                     declare: str, too_many: str, name_in_body: bool = False) -> tuple[Route, ...]:
    """``GET /api/integrations/{kind}`` and ``GET``, ``POST``, ``DELETE .../{name}``: the caller's own
    endpoints of one kind (MCP servers, remote A2A agents), kept alike (``functions/integrations.py``)."""
    path, model, name = f"/api/integrations/{kind}", "shared.connectors.user_mcp:", {"name": ANY_SEGMENT}
    one, bad_name = f"{path}/{{name}}", f"400 {invalid_name} for a name outside [A-Za-z0-9_-]{{1,40}}"
    found = f"the {thing} (never its token)"
    refused = (f"400 MCP_URL_NOT_ALLOWED when the URL's host resolves to a private, loopback, link-local or reserved "
               f"address (unless MCP_ALLOW_PRIVATE_URLS); {bad_name + '; ' if name_in_body else ''}409 {too_many}; "
               "503 INTEGRATIONS_NOT_CONFIGURED without CREDENTIALS_ENCRYPTION_KEY.")
    return (
        Route("GET", path, f"list{op}s", "integrations", f"functions.integrations:list_{handler}s", errors=(401,),
              query=(page_limit(), CURSOR),
              replies=(Reply(200, f"the caller's {things} (never a token)", model=model + "McpServersResponse"),)),
        Route("GET", one, f"get{op}", "integrations", f"functions.integrations:get_{handler}", segments=name,
              description=f"Whether the caller declared the {things[:-1]}; {bad_name}.", errors=(400, 401),
              replies=(Reply(200, found, model=model + "McpServerResponse"),)),
        Route("POST", one, f"connect{op}", "integrations", f"functions.integrations:connect_{handler}", segments=name,
              description=f"{declare} {refused}", request=model + "McpServerRequest",
              replies=(Reply(200, f"the stored {found[4:]}", model=model + "McpServerResponse"),),
              errors=(400, 401, 409, 413, 415, 503)),
        Route("DELETE", one, f"disconnect{op}", "integrations", f"functions.integrations:disconnect_{handler}",
              segments=name, errors=(400, 401),
              replies=(Reply(200, f"the {thing} is forgotten", model=model + "McpServerRemovedResponse"),)),
    )

ROUTES: tuple[Route, ...] = (
    Route("POST", "/api/agent/run", "run", "run", "functions.run:run", request="shared.api:RunRequest",
          description="multitaskStrategy (reject by default) says what happens when the thread is busy "
                      "(docs/run-control.md). A run's own webhook URL needs the caller's webhook named default "
                      "(its secret signs): 400 WEBHOOK_SECRET_MISSING otherwise.",
          replies=(Reply(200, "the run's result (status completed, awaiting_confirmation or failed)",
                         model="shared.state.records:RunResult"),
                   Reply(202, "queued behind the thread's runs (multitaskStrategy enqueue, interrupt or rollback): "
                              "status queued, runId, follow", model="shared.state.records:RunResult")),
          errors=(*_BODY, 422)),
    Route("POST", "/api/agent/run/stream", "stream", "stream", "functions.stream:stream",
          request="shared.api:RunRequest",
          replies=(Reply(200, "NDJSON run events, one per line (Server-Sent Events with Accept: text/event-stream: "
                              "event = type, id = seq)", stream="RunEvent", sse=True),), errors=(*_BODY, 422)),
    Route("POST", "/api/agent/agui", "agui", "stream", "functions.stream:agui", request="ag_ui.core:RunAgentInput",
          description="AG-UI (docs/ag-ui.md): a RunAgentInput starts a run (threadId, runId: the same input again "
                      "is the same run) or, with resume entries, decides its interrupts (approvals) through the "
                      "same path as POST /api/agent/approve and follows the resumed run. A new run needs a "
                      "user message with text, threadId is one of our thread ids (1-128 characters of A-Z, a-z, "
                      "0-9, _ and -) and runId an idempotency key (1-255 visible ASCII characters); 400 "
                      "INVALID_REQUEST otherwise. Frontend tools: a name matches ^[A-Za-z_][A-Za-z0-9_]{0,63}$, "
                      "at most 20; trailing tool messages must answer calls that wait (must be a pending call "
                      "of a client tool). A resume payload is an object {approved?, arguments?, reason?} or a "
                      "boolean (approved must be true or false, edits go only with an approval, unknown "
                      "fields refused); entries answer interrupts of one run only; edited arguments as for "
                      "POST /api/agent/approve. Last-Event-ID resumes the stream.",
          replies=(Reply(200, "the AG-UI event stream (Server-Sent Events; data: one AG-UI event, id: "
                              "<start>:<seq>:<n>)", sse=True, schema={"type": "string"}),), errors=(*_BODY, 422)),
    Route("GET", "/api/agent/runs", "listRuns", "runs", "functions.runs:list_runs",
          description="The caller's runs, newest first (other users' runs are never listed).",
          query=(page_limit(), CURSOR),
          replies=(Reply(200, "one summary per run", model="shared.runs_list:RunsListResponse"),), errors=(400, 401)),
    Route("GET", "/api/agent/runs/{runId}", "getRun", "runs", "functions.runs:get_run",
          replies=(Reply(200, "the run record and each model call's usage", model="shared.usage.views:RunView"),),
          errors=(401, 404)),
    Route("GET", "/api/agent/sessions", "listSessions", "sessions", "functions.sessions:list_sessions",
          query=(page_limit(), CURSOR),
          replies=(Reply(200, "the caller's sessions, newest first", model="shared.plans.contracts:SessionsList"),),
          errors=(400, 401)),
    Route("POST", "/api/agent/sessions", "createSession", "sessions", "functions.sessions:create_session",
          description="Start a plan session (seed 004): the agent proposes a plan to review.",
          request="shared.plans.contracts:CreateSessionRequest",
          replies=(Reply(201, "the proposed plan (status awaiting_confirmation)",
                         model="shared.plans.contracts:SessionCreated"),
                   Reply(200, "planning failed (ok false, status failed, error)",
                         model="shared.plans.contracts:SessionCreated")),
          errors=(400, 401, 413, 415, 422)),
    Route("GET", "/api/agent/sessions/{sessionId}", "getSession", "sessions", "functions.sessions:get_session",
          replies=(Reply(200, "the session: plan, tasks with their ReAct history, plan versions, pending approvals, "
                              "usage, result", model="shared.plans.contracts:SessionView"),), errors=(401, 404)),
    Route("POST", "/api/agent/sessions/{sessionId}/refine", "refineSession", "sessions",
          "functions.sessions:refine_session", request="shared.plans.contracts:RefineRequest",
          replies=(Reply(200, "the revised plan (version + 1)", model="shared.session_handlers:RefineResponse"),),
          errors=_BODY),
    Route("POST", "/api/agent/sessions/{sessionId}/confirm", "confirmSession", "sessions",
          "functions.sessions:confirm_session", request="shared.plans.contracts:ConfirmRequest",
          replies=(Reply(202, "executing", model="shared.plans.contracts:SessionAccepted"),), errors=_BODY),
    Route("POST", "/api/agent/sessions/{sessionId}/cancel", "cancelSession", "sessions",
          "functions.sessions:cancel_session", request="shared.plans.contracts:CancelRequest", body_required=False,
          description="The body is optional: none, {} or {\"reason\": ...} (shown as the session's "
                      "cancelReason). A repeat answers the session as it is (idempotent); 409 only when "
                      "the session already ended otherwise.",
          replies=(Reply(202, "cancelled, or cancelling before the next act",
                         model="shared.plans.contracts:SessionAccepted"),), errors=_BODY),
    Route("GET", "/api/agent/sessions/{sessionId}/events", "getSessionEvents", "sessions",
          "functions.sessions:session_events",
          query=(AFTER, LAST_EVENT_ID, FOLLOW),
          replies=(Reply(200, "the session's events with seq > after (NDJSON; Server-Sent Events with Accept: "
                              "text/event-stream, id = seq); after = the Last-Event-ID header, lastEventId or after",
                         stream="SessionEvent", sse=True),),
          errors=(400, 401, 404)),
    Route("GET", "/api/agent/usage", "getUsage", "usage", "functions.usage:usage",
          query=(Param("from", "instant"), Param("to", "instant"),
                 Param("groupBy", "enum", default="operationType",
                       values=("operationType", "contextType", "model", "day"))),
          replies=(Reply(200, "token and cost figures per group", model="shared.usage.views:UsageResponse"),),
          errors=(400, 401)),
    Route("GET", "/api/agent/runs/{runId}/trace", "getRunTrace", "runs", "functions.runs:get_run_trace",
          description="The run's trace as a waterfall (docs/observability.md, \"The console's trace\"): its "
                      "invocations (invoke_agent), model calls (chat, with tokens and cost), tool calls "
                      "(execute_tool) and the waits for a person between them, rebuilt from the usage ledger and "
                      "the run's actions and approvals (OpenTelemetry export on or off).",
          replies=(Reply(200, "the spans, in start order", model="shared.trace_view:RunTrace"),), errors=(401, 404)),
    Route("GET", "/api/agent/runs/{runId}/events", "getRunEvents", "runs", "functions.runs:run_events",
          query=(AFTER, LAST_EVENT_ID, FOLLOW, UNTIL),
          replies=(Reply(200, "persisted events with seq > after (NDJSON; Server-Sent Events with Accept: "
                              "text/event-stream, event = type, id = seq); after = the Last-Event-ID header, "
                              "lastEventId or after; a follow sends heartbeats and ends with result, error or "
                              "stream_end", stream="RunEvent", sse=True),),
          errors=(400, 401, 404)),
    Route("POST", "/api/agent/runs/{runId}/cancel", "cancelRun", "approve", "functions.approve:cancel_run",
          request="shared.api:CancelRunRequest", body_required=False,
          description="Cancel a run: a queued one leaves its thread's queue at once; a paused one is closed "
                      "(its approvals rejected); a working one stops at its next step boundary (its executed "
                      "side effects stay, named in its error). A repeat answers the run as it is; "
                      "409 RUN_ENDED when it already ended otherwise.",
          replies=(Reply(202, "cancelled, or cancelling at the next step boundary",
                         model="shared.responses:CancelRunResponse"),), errors=_BODY),
    Route("GET", "/api/agent/approvals", "listApprovals", "runs", "functions.runs:list_approvals",
          description="The caller's approvals across chat runs and plan sessions, newest first (other users' "
                      "are never listed): pending = waiting for a decision; decided = approved, rejected or "
                      "expired. Decide with POST /api/agent/approve. Unknown, repeated or bad parameters: "
                      "400 INVALID_QUERY.",
          query=(Param("status", "enum", default="pending", values=("pending", "decided", "all")),
                 page_limit(), CURSOR),
          replies=(Reply(200, "the approvals, newest first", model="shared.approvals_inbox:ApprovalsList"),),
          errors=(400, 401)),
    Route("GET", "/api/agent/approvals/{approvalId}", "getApproval", "approve", "functions.approve:get_approval",
          description="One of the caller's approvals with its call's arguments (as they will run; "
                      "originalArguments: the model's, when an approval with edits changed them) and the tool's "
                      "JSON schema of them (what an edit form needs; absent: the tool takes no edits).",
          replies=(Reply(200, "the approval and its call", model="shared.agent.approval_edits:ApprovalDetail"),),
          errors=(400, 401, 404)),
    Route("POST", "/api/agent/approve", "approve", "approve", "functions.approve:approve",
          request="shared.api:ApproveRequest",
          description="Decide an approval. With arguments (approve only): the call runs with these edited arguments "
                      "instead of the model's: they must fit the tool's schema (400 INVALID_ARGUMENTS naming "
                      "arguments.<field>: invalid edited arguments), policy decides them again (400 "
                      "EDIT_DENIED_BY_POLICY: policy refuses the tool with the edited arguments) and a virtual tool "
                      "takes none (400 EDIT_NOT_SUPPORTED: cannot be edited); arguments (edits) go only with "
                      "decision approve (400 INVALID_REQUEST).",
          replies=(Reply(202, "decision recorded; the run resumes asynchronously",
                         model="shared.responses:ApproveResponse"),), errors=(400, 401, 404, 409, 410, 503)),
    Route("POST", "/agent/run", "goals", "goals", "functions.goals:goals", public=True,
          description="Goal-planning agent (seed 000), called by the backend only (IAM in production).",
          request="shared.goals.contracts:GoalsRequest",
          replies=(Reply(200, "reply, action and state", model="shared.goals.contracts:GoalsResponse"),),
          errors=(400, 502, 503)),
    Route("GET", "/api/integrations", "listIntegrations", "integrations", "functions.integrations:list_integrations",
          replies=(Reply(200, "whether each integration is connected (never a token)",
                         model="shared.connectors.integrations_api:IntegrationsResponse"),), errors=(401,)),
    # A user's own MCP servers: before ``{provider}`` (which never matches ``mcp``).
    *_endpoint_routes("mcp", "McpServer", "mcp_server", "server", "MCP servers", "INVALID_MCP_SERVER_NAME",
                      declare="Declare (replace) one of the caller's MCP servers (Streamable HTTP): its URL and an "
                              "optional bearer token, both stored encrypted; its tools join the caller's runs only.",
                      too_many="TOO_MANY_MCP_SERVERS beyond 20 servers"),
    Route("GET", "/api/integrations/mcp/{name}/tools", "listMcpServerTools", "integrations",
          "functions.integrations:list_mcp_server_tools", segments={"name": ANY_SEGMENT},
          description="The server's tools as the caller's runs see them (names, side effect or not), from "
                      "the instance's listing cache (MCP_LIST_TTL_S) or listed now within MCP_TIMEOUT_S; "
                      "available: false (with error) when it cannot be listed.",
          replies=(Reply(200, "the server's tools", model="shared.connectors.user_mcp:McpToolsResponse"),),
          errors=(400, 401)),
    # A user's own remote A2A agents (docs/a2a.md): before ``{provider}`` (which never matches ``a2a``).
    *_endpoint_routes("a2a", "A2aAgent", "a2a_agent", "agent", "remote A2A agents", "INVALID_A2A_AGENT_NAME",
                      declare="Declare (replace) one of the caller's remote A2A agents: its base URL (where its agent "
                              "card is) and an optional bearer token, both stored encrypted; its tools "
                              "{name}_send_message (a side effect) and {name}_get_task join the caller's runs only.",
                      too_many="TOO_MANY_A2A_AGENTS beyond 20", name_in_body=True),
    Route("GET", "/api/integrations/{provider}", "getIntegration", "integrations",
          "functions.integrations:get_integration", segments={"provider": PROVIDER_SEGMENT},
          replies=(Reply(200, "whether the integration is connected (never a token)",
                         model="shared.connectors.integrations_api:IntegrationResponse"),), errors=(401, 404)),
    Route("POST", "/api/integrations/{provider}", "connectIntegration", "integrations",
          "functions.integrations:connect_integration", segments={"provider": PROVIDER_SEGMENT},
          description="Store (replace) the caller's tokens for the provider, encrypted. "
                      "503 INTEGRATIONS_NOT_CONFIGURED without CREDENTIALS_ENCRYPTION_KEY.",
          request="shared.connectors.integrations_api:ConnectRequest",
          replies=(Reply(200, "the stored connection (never a token)",
                         model="shared.connectors.integrations_api:IntegrationResponse"),),
          errors=(400, 401, 404, 413, 415, 503)),
    Route("DELETE", "/api/integrations/{provider}", "disconnectIntegration", "integrations",
          "functions.integrations:disconnect_integration", segments={"provider": PROVIDER_SEGMENT},
          replies=(Reply(200, "the tokens are forgotten",
                         model="shared.connectors.integrations_api:IntegrationRemovedResponse"),),
          errors=(401, 404, 503)),
    # The caller's webhooks: served by ``integrations``, which holds the
    # credentials key that seals their secrets.
    # The caller's schedules (docs/run-control.md): served by ``integrations`` like webhooks.
    Route("GET", "/api/agent/schedules", "listSchedules", "integrations", "functions.integrations:list_schedules",
          query=(page_limit(), CURSOR),
          replies=(Reply(200, "the caller's schedules", model="shared.agent.schedules:SchedulesResponse"),),
          errors=(401,)),
    Route("GET", "/api/agent/schedules/{name}", "getSchedule", "integrations", "functions.integrations:get_schedule",
          segments={"name": ANY_SEGMENT},
          replies=(Reply(200, "the schedule (declared false when the caller has none of that name)",
                         model="shared.agent.schedules:ScheduleResponse"),), errors=(400, 401, 404)),
    Route("PUT", "/api/agent/schedules/{name}", "putSchedule", "integrations", "functions.integrations:put_schedule",
          segments={"name": ANY_SEGMENT}, request="shared.agent.schedules:ScheduleRequest",
          description="Declare (replace) one of the caller's schedules: a five-field cron expression in an IANA "
                      "time zone, the prompt each run gets (or a session template: each occurrence creates a "
                      "plan session awaiting confirmation), optionally the thread it runs on and its "
                      "multitaskStrategy (enqueue by default). 400 INVALID_CRON / INVALID_TIMEZONE / "
                      "INVALID_SCHEDULE (neither or both of prompt and session) / UNKNOWN_TOOLS; "
                      "409 TOO_MANY_SCHEDULES beyond 20. Each occurrence starts one run or session "
                      "(docs/run-control.md).",
          replies=(Reply(200, "the stored schedule and its next occurrence",
                         model="shared.agent.schedules:ScheduleResponse"),), errors=(400, 401, 404, 409, 413, 415)),
    Route("DELETE", "/api/agent/schedules/{name}", "deleteSchedule", "integrations",
          "functions.integrations:delete_schedule", segments={"name": ANY_SEGMENT},
          replies=(Reply(200, "the schedule is forgotten", model="shared.agent.schedules:ScheduleRemovedResponse"),),
          errors=(400, 401, 404)),
    Route("GET", "/api/agent/schedules/{name}/runs", "listScheduleRuns", "integrations",
          "functions.integrations:schedule_runs", segments={"name": ANY_SEGMENT},
          query=(page_limit(100), CURSOR),
          description="The runs the schedule started, newest first (pages of limit, 100 by default), each with "
                      "its occurrence and the run's status now (a session template's: sessionId and the "
                      "session's status).",
          replies=(Reply(200, "the runs", model="shared.agent.schedules:ScheduleRunsResponse"),),
          errors=(400, 401, 404)),
    Route("GET", "/api/agent/webhooks", "listWebhooks", "integrations", "functions.integrations:list_webhooks",
          query=(page_limit(), CURSOR), replies=(Reply(200, "the caller's webhooks (never a secret)",
                         model="shared.agent.webhooks:WebhooksResponse"),),
          errors=(401,)),
    Route("GET", "/api/agent/webhooks/{name}", "getWebhook", "integrations", "functions.integrations:get_webhook",
          segments={"name": ANY_SEGMENT},
          replies=(Reply(200, "the webhook (never its secret); declared false when the caller has none of that "
                              "name", model="shared.agent.webhooks:WebhookResponse"),),
          errors=(400, 401, 404)),
    Route("PUT", "/api/agent/webhooks/{name}", "putWebhook", "integrations", "functions.integrations:put_webhook",
          segments={"name": ANY_SEGMENT}, request="shared.agent.webhooks:WebhookRequest",
          description="Declare (replace) one of the caller's webhooks: the URL deliveries are POSTed to, the "
                      "events delivered and the Standard Webhooks signing secret (generated when absent; shown "
                      "in this answer only). 400 WEBHOOK_URL_NOT_ALLOWED when the URL's host is not public "
                      "(unless MCP_ALLOW_PRIVATE_URLS); 409 TOO_MANY_WEBHOOKS beyond 20; "
                      "503 INTEGRATIONS_NOT_CONFIGURED without CREDENTIALS_ENCRYPTION_KEY. Deliveries: "
                      "docs/run-control.md.",
          replies=(Reply(200, "the stored webhook and its secret", model="shared.agent.webhooks:WebhookResponse"),),
          errors=(400, 401, 404, 409, 413, 415, 503)),
    Route("DELETE", "/api/agent/webhooks/{name}", "deleteWebhook", "integrations",
          "functions.integrations:delete_webhook", segments={"name": ANY_SEGMENT},
          replies=(Reply(200, "the webhook is forgotten", model="shared.agent.webhooks:WebhookRemovedResponse"),),
          errors=(400, 401, 404)),
    Route("GET", "/api/agent/webhooks/{name}/deliveries", "listWebhookDeliveries", "integrations",
          "functions.integrations:webhook_deliveries", segments={"name": ANY_SEGMENT},
          query=(page_limit(100), CURSOR),
          description="The webhook's deliveries, newest first (pages of limit, 100 by default): each with its "
                      "deliveryId (the webhook-id header of every attempt), status and attempts. Deliveries to a "
                      "run's own webhook URL are listed under default.",
          replies=(Reply(200, "the deliveries", model="shared.agent.webhooks:DeliveriesResponse"),),
          errors=(400, 401, 404)),
    Route("GET", "/api/agent/containers", "listContainers", "containers", "functions.containers:list_containers",
          query=(page_limit(), CURSOR), replies=(Reply(200, "the caller's live workspaces, oldest first",
                         model="shared.workspaces:ContainersResponse"),), errors=(401,)),
    Route("GET", "/api/agent/containers/{containerId}/files", "getContainerFiles", "containers",
          "functions.containers:container_files",
          query=(Param("path", "string", description="a file, relative to the workspace: its text instead of the "
                                                     "listing (400 PATH_REFUSED for .., absolute or symlinked-out "
                                                     "paths; 404 FILE_NOT_FOUND)"),),
          description="Read-only: the caller's workspace's files, or one file's text with path. Another user's "
                      "or an unknown id: 404 WORKSPACE_NOT_FOUND; 503 SANDBOX_NOT_CONFIGURED without SANDBOX_URL.",
          replies=(Reply(200, "the listing (files), or with path the file",
                         model="shared.workspaces:ContainerFilesResponse"),),
          errors=(400, 401, 404, 503)),
    Route("DELETE", "/api/agent/containers/{containerId}", "deleteContainer", "containers",
          "functions.containers:delete_container",
          description="Destroy one of the caller's workspaces and its files (its snapshot too). Another user's "
                      "or an unknown id: 404 WORKSPACE_NOT_FOUND; 503 SANDBOX_NOT_CONFIGURED without SANDBOX_URL.",
          replies=(Reply(200, "the workspace is gone", model="shared.workspaces:ContainerRemovedResponse"),),
          errors=(401, 404, 502, 503)),
    Route("GET", "/api/agent/threads", "listThreads", "data", "functions.data:list_threads",
          description="The caller's threads, newest first (a thread id is the caller's own: another user's "
                      "thread of the same id is theirs).",
          query=(page_limit(), CURSOR),
          replies=(Reply(200, "the caller's threads", model="shared.user_data:ThreadsList"),), errors=(400, 401)),
    Route("GET", "/api/agent/threads/{threadId}", "getThread", "data", "functions.data:get_thread",
          description="One page of the thread's messages, newest first, and the runs they belong to.",
          query=(page_limit(), CURSOR),
          replies=(Reply(200, "the thread", model="shared.user_data:ThreadView"),), errors=(400, 401, 404)),
    Route("DELETE", "/api/agent/threads/{threadId}", "deleteThread", "data", "functions.data:delete_thread",
          description="Delete the thread, its messages and its runs (their turns, actions, events and "
                      "approvals; the usage ledger keeps its entries). 409 THREAD_ACTIVE while one of its runs "
                      "has not ended (a paused one included).",
          replies=(Reply(200, "deleted", model="shared.user_data:Deleted"),), errors=(401, 404, 409)),
    # On the runs function: a path is served by one function whatever the method (one endpoint routes by path).
    Route("DELETE", "/api/agent/runs/{runId}", "deleteRun", "runs", "functions.runs:delete_run",
          description="Delete an ended run (completed or failed): its record, turns, actions, events and "
                      "approvals. 409 RUN_ACTIVE for a run that has not ended (paused included).",
          replies=(Reply(200, "deleted", model="shared.user_data:Deleted"),), errors=(401, 404, 409)),
    Route("GET", "/api/agent/memories", "listMemories", "data", "functions.data:list_memories",
          description="What the agent remembers about the caller (save_memory), newest first.",
          query=(page_limit(), CURSOR),
          replies=(Reply(200, "the memories", model="shared.user_data:MemoriesList"),), errors=(400, 401)),
    Route("DELETE", "/api/agent/memories/{memoryId}", "deleteMemory", "data", "functions.data:delete_memory",
          replies=(Reply(200, "forgotten", model="shared.user_data:Deleted"),), errors=(401, 404)),
    Route("POST", "/api/agent/me/export", "exportMe", "data", "functions.data:export_me",
          description="Every document of the caller (docs/firestore-layout.md) as one JSON document, by path; "
                      "tokens are never included.",
          replies=(Reply(200, "the caller's data", model="shared.user_data:Export"),), errors=(401,)),
    Route("DELETE", "/api/agent/me", "eraseMe", "data", "functions.data:erase_me",
          description="Erase every document of the caller in every collection (runs, threads, approvals, "
                      "memories, integrations and MCP servers with their tokens, projects, sessions, audit "
                      "entries, limits...); the usage ledger is anonymised (kept without the uid). Idempotent. "
                      "409 RUN_ACTIVE while a run is working (not ended and not paused).",
          replies=(Reply(200, "erased", model="shared.user_data:Erased"),), errors=(401, 409)),
    *A2A_ROUTES,
    Route("GET", "/api/admin/users/{uid}", "adminGetUser", "admin", "functions.admin:get_user",
          segments={"uid": UID_SEGMENT},
          description="A user's trust level, profile (emailAllowlist) and own limits (money caps included). The "
                      "admin principal only (ADMIN_SERVICE_ACCOUNTS or ADMIN_UIDS; make dev: a dev-admin:<name> "
                      "token): anyone else 403 ADMIN_ONLY. A path "
                      "segment that is no uid: 404 ROUTE_NOT_FOUND.",
          replies=(Reply(200, "the user", model="shared.admin:AdminUser"),), errors=(401, 403, 404)),
    Route("PATCH", "/api/admin/users/{uid}", "adminPatchUser", "admin", "functions.admin:patch_user",
          segments={"uid": UID_SEGMENT}, request="shared.admin:UserPatch",
          description="Change a user's trustLevel, profile fields (emailAllowlist...) and own limits "
                      "(activeRuns, activeSessions, dailyTokens, and the money caps dailyBudgetUsd and "
                      "monthlyBudgetUsd in USD; null: the deployment's, 0: off for the user); the fields given "
                      "change, the others stay. A money cap needs the deployment's cap of that period on "
                      "(BUDGET_USER_DAILY_USD / BUDGET_USER_MONTHLY_USD > 0): else 400 BUDGET_CAP_OFF. Audited "
                      "(audit kind admin_change). The admin principal only: anyone else 403 ADMIN_ONLY.",
          replies=(Reply(200, "the user as changed", model="shared.admin:AdminUser"),),
          errors=(400, 401, 403, 404, 413, 415)),
    # make dev's own routes (devserver.py), public: liveness and the OpenAPI document.
    Route("GET", "/healthz", "health", None, "devserver:healthz", public=True, description="make dev is up",
          replies=(Reply(200, "up", schema={"type": "object", "properties": {"ok": {"const": True}},
                                            "required": ["ok"], "additionalProperties": False}),)),
    Route("GET", "/openapi.json", "openapi", None, "devserver:openapi_document", public=True,
          description="this document",
          replies=(Reply(200, "the OpenAPI 3.1 document",
                         schema={"type": "object", "required": ["openapi", "paths"]}),)),
)


@functools.lru_cache(maxsize=256)
def resolve(target: str) -> Any:
    """The object a ``"module:attribute"`` path of the table names (a handler, a model), imported on
    first use."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def routes_of(function: str) -> list[Route]:
    """The routes the deployed function ``function`` serves, in table order."""
    return [r for r in ROUTES if r.function == function]


@functools.lru_cache(maxsize=512)
def _pattern(path: str, segments: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    special = dict(segments)
    parts = re.split(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", path)
    regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>{special.get(p, ID_SEGMENT)})"
                    for i, p in enumerate(parts))
    return re.compile(regex)


def _matches(route: Route, path: str) -> dict[str, str] | None:
    # fullmatch: ``$`` would also accept a trailing newline (``/runs/run_x%0A``).
    m = _pattern(route.path, tuple(sorted(route.segments.items()))).fullmatch(path)
    return None if m is None else m.groupdict()


class Match(NamedTuple):
    """What the table says about one request: the route and its path parameters, or the methods the
    path answers (a 405 with ``Allow`` when the method is not among them; a 404 when there are none)."""

    route: Route | None
    params: dict[str, str]
    allowed: tuple[str, ...]


def match(method: str, path: str, routes: Iterable[Route]) -> Match:
    """Route ``method path`` among ``routes``. One trailing slash is ignored (``/api/agent/runs/``)."""
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    allowed: list[str] = []
    for route in routes:
        params = _matches(route, path)
        if params is None:
            continue
        if route.method == method:
            return Match(route, params, ())
        if route.method not in allowed:
            allowed.append(route.method)
    return Match(None, {}, tuple(allowed))
