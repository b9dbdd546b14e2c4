"""Authorization matrix (issue 14, scope 3), generated from the OpenAPI document.

Every authenticated operation in ``/openapi.json`` is a row; every object it refers to (a path
parameter, or a request-body field naming an object: ``threadId``, ``approvalId``...) is a column.
For each cell, user A first creates the object through the API; then

- user B acting on A's object gets 404, never 403, and no byte of A's data (a route whose
  reference is a per-user name, like ``{provider}``, shows B only B's own state and leaves A's
  untouched);
- without credentials the call is 401;
- A itself can use the reference (so the 404 above is about B, not about a bad id).

Every operation without a reference that reads (the lists and the usage figures) is a row too: after
A has made one object of every kind (a paused run with its thread and approval, a plan session, an
integration, a memory, a project), B's answer is exactly a brand-new user's answer. Every operation
that starts a model run (a ``RunRequest`` body) is checked for what is not behind a route at all:
A's memories and projects never reach B's model context or B's tool results.

New routes are covered without editing this test. A reference this test does not know how to create
fails loudly (add a creator to ``CREATORS``); so does a new operation without authentication
(``PUBLIC_OPERATIONS``) and a request body without a template (``BODIES``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, ModelResponse, Turn
from shared.models.offline import OfflineModel
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.openapi import build_openapi
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.e2e.test_openapi import KEY
from tests.messages import deliver
from tests.sandbox.support import SandboxProcess

ALICE = {"Authorization": "Bearer dev:alice"}
BOB = {"Authorization": "Bearer dev:bob"}
SECRET = "alice-secret-7f3a"
"""In everything A creates: B's answers must never contain it."""
PUBLIC_OPERATIONS = {"goals", "health", "openapi", "a2aAgentCard"}
"""Operations with ``security: []``: the goals agent is IAM-protected in production and stores
nothing per user; ``make dev``'s liveness answer, the document itself and the A2A agent card (public
by the A2A spec: it says how to authenticate). Any other operation without authentication fails
this test."""
A2A_PREFIX = "/a2a"
"""The A2A server's operations answer in A2A's words (JSON-RPC errors, google.rpc statuses), not in
our error envelope: tests/a2a/test_a2a_http.py holds their matrix (B gets TaskNotFound, no
credentials 401) on both transports."""
NOT_REFERENCES = {"teamId"}
ADMIN_PREFIX = "/api/admin/"
"""The admin API's operations are rows of their own (test_admin_operations_are_admin_only): any user
but the admin principal gets 403 ADMIN_ONLY, whoever's uid the path names."""
"""Body fields named like references that name no object of ours (a Slack workspace id)."""
NOT_REFERENCES_IN = {"RunAgentInput": {"runId", "parentRunId"}}
"""Per request schema: AG-UI's client-chosen run ids name no object of ours (its ``threadId`` does)."""


PROBE = "hello"
"""The prompt of every request B (and A, for its own control call) makes: the model looks up the
caller's memories and projects and answers with everything it was given, so anything of A's that
reached B's run would show up in B's answer."""


def _dump(request: ModelRequest) -> str:
    return json.dumps([request.system_instruction, [t.model_dump(mode="json") for t in request.turns]])


def _model(request: ModelRequest) -> Turn | ModelResponse:
    """Plans sessions as ``make dev``'s offline model does; in chats: ``make a project`` creates a
    template then a project from it, the probe reads memories and projects and dumps its request,
    and any other first turn pauses on a ``save_memory`` approval (so runs, threads and approvals
    exist)."""
    if request.response_schema is not None:
        return OfflineModel().generate(request)
    last = request.turns[-1]
    answered = {p.function_response.name: p.function_response.response for p in last.parts if p.function_response}
    if "template_create" in answered:
        template = answered["template_create"]["template"]["templateId"]
        return calls_turn(call("project_create_from_template", {"templateId": template, "name": f"P {SECRET}"}))
    if "container_create" in answered:
        return text_turn(f"workspace {answered['container_create']['containerId']}")
    if "project_create_from_template" in answered:
        return text_turn(f"project {answered['project_create_from_template']['project']['projectId']}")
    if "search_memory" in answered or "projects_list" in answered:
        return text_turn(_dump(request))
    if answered:
        return text_turn(f"done {SECRET}")
    if last.text.startswith("make a project"):
        return calls_turn(call("template_create", {"name": f"T {SECRET}", "description": SECRET,
                                                   "tasks": [{"title": f"Kick-off {SECRET}"}]}))
    if last.text.startswith("make a workspace"):
        return calls_turn(call("container_create", {"group": SECRET}))
    if last.text.startswith(PROBE):
        return calls_turn(call("search_memory", {"query": "remember"}), call("projects_list", {}))
    return calls_turn(call("save_memory", {"text": f"{last.text[:100]} {SECRET}"}))


@dataclass
class Ref:
    value: str
    scope: Literal["global", "per_user"]
    """``global``: an id only its owner may use (B: 404). ``per_user``: a name inside each user's
    own namespace (B sees only B's own, and A's object stays as it was)."""


@dataclass
class Api:
    """A's client on the dev app; ``deliver`` hands the work messages queued so far (resumes after
    an approval, session continuations) to the runtime's router, as Pub/Sub would."""

    client: FlaskClient
    rt: Runtime
    dispatcher: RecordingDispatcher

    def deliver(self) -> None:
        deliver(self.rt)


Creator = Callable[[Api], Ref]


def _paused_run(api: Api, prompt: str = f"remember {SECRET}") -> dict[str, Any]:
    resp = api.client.post("/api/agent/run", json={"prompt": prompt}, headers=ALICE)
    body = resp.get_json()
    assert resp.status_code == 200 and body["status"] == "awaiting_confirmation", body
    return body  # type: ignore[no-any-return]


def _approve_until_done(api: Api, run: dict[str, Any]) -> dict[str, Any]:
    """Approve every pause of A's run (through the API) until it completes: its side effects happen."""
    for _ in range(5):
        if run["status"] != "awaiting_confirmation":
            break
        for approval in run.get("approvals") or [run["approval"]]:
            resp = api.client.post("/api/agent/approve", json={"approvalId": approval["id"], "decision": "approve"},
                                   headers=ALICE)
            assert resp.status_code == 202, resp.get_json()
        api.deliver()
        run = api.client.get(f"/api/agent/runs/{run['runId']}", headers=ALICE).get_json()
        run = {**run, **(run.get("result") or {})}
    assert run["status"] == "completed", run
    return run


def create_run(api: Api) -> Ref:
    return Ref(_paused_run(api)["runId"], "global")


def create_thread(api: Api) -> Ref:
    """A thread paused on an approval. A thread id is the client's, so each user has their own
    (issue 35): B's run on the same id is B's own thread, and B's ``supersede`` (see BODIES) does
    not touch A's."""
    return Ref(_paused_run(api)["threadId"], "per_user")


def create_approval(api: Api) -> Ref:
    return Ref(_paused_run(api)["approval"]["approvalId"], "global")


def create_integration(api: Api) -> Ref:
    resp = api.client.post("/api/integrations/slack", json={"accessToken": f"xoxp-{SECRET}",
                                                            "accountEmail": f"{SECRET}@example.com"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    return Ref("slack", "per_user")


def create_mcp_server(api: Api) -> Ref:
    """One of A's own MCP servers and one of A's own remote A2A agents (their URLs and tokens hold
    the secret; nothing listens there), and A's webhook and schedule of that name."""
    for kind in ("mcp", "a2a"):
        resp = api.client.post(f"/api/integrations/{kind}/private-notes", json={
            "url": f"http://127.0.0.1:9/{SECRET}?key={SECRET}", "accessToken": f"tok-{SECRET}"}, headers=ALICE)
        assert resp.status_code == 200, resp.get_json()
        assert SECRET in resp.get_json()["url"] and f"key={SECRET}" not in resp.get_data(as_text=True)
    # and a webhook and a schedule of the same name (names live in each user's namespace, per kind)
    resp = api.client.put("/api/agent/webhooks/private-notes", json={
        "url": f"http://127.0.0.1:9/{SECRET}", "events": ["run.*"]}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    resp = api.client.put("/api/agent/schedules/private-notes", json={
        "cron": "0 8 * * *", "prompt": f"brief {SECRET}"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    return Ref("private-notes", "per_user")


def create_session(api: Api) -> Ref:
    """A plan session awaiting confirmation (its plan names the secret)."""
    resp = api.client.post("/api/agent/sessions", json={"prompt": f"plan {SECRET}"}, headers=ALICE)
    assert resp.status_code == 201, resp.get_json()
    return Ref(resp.get_json()["sessionId"], "global")


def create_project(api: Api) -> Ref:
    """A project, made by A's agent from a template A's agent made (both approved by A)."""
    done = _approve_until_done(api, _paused_run(api, "make a project"))
    project_id = done["summary"].removeprefix("project ")
    assert re.fullmatch(r"[A-Za-z0-9_-]+", project_id), done
    return Ref(project_id, "global")


def create_container(api: Api) -> Ref:
    """A workspace of the sandbox service (its group names the secret), made by A's agent (approved)."""
    done = _approve_until_done(api, _paused_run(api, "make a workspace"))
    container_id = done["summary"].removeprefix("workspace ")
    assert re.fullmatch(r"ws_[0-9a-f]+", container_id), done
    return Ref(container_id, "global")


def create_memory(api: Api) -> None:
    _approve_until_done(api, _paused_run(api))


def create_memory_ref(api: Api) -> Ref:
    """A memory A's agent saved (approved by A), by its id."""
    create_memory(api)
    memories = api.client.get("/api/agent/memories", headers=ALICE).get_json()["memories"]
    return Ref(memories[0]["memoryId"], "global")


CREATORS: dict[str, Creator] = {
    "runId": create_run,
    "threadId": create_thread,
    "approvalId": create_approval,
    "provider": create_integration,
    "name": create_mcp_server,
    "sessionId": create_session,
    "entityId": create_project,
    "containerId": create_container,
    "memoryId": create_memory_ref,
}
"""How A creates the object a reference names, through the API. A new kind of object needs its
creator here: the test fails until it has one. (A plan lives in its session: its version is a
field of ``confirm``'s body, not an id of its own.)"""
REFERENCE_BODY = {"entityId": {"contextType": "project"}}
"""What else a body needs for the reference to be read (an entity is looked up in a project context)."""

BODIES: dict[str, dict[str, Any]] = {
    "RunRequest": {"prompt": PROBE, "supersede": True},  # B must not be able to supersede A's pause
    "ApproveRequest": {"approvalId": "apr_placeholder", "decision": "approve"},
    "ConnectRequest": {"accessToken": "xoxp-bob"},
    "McpServerRequest": {"url": "http://127.0.0.1:9/bob", "accessToken": "tok-bob"},
    "CreateSessionRequest": {"prompt": "plan a trip"},
    "RefineRequest": {"message": "also pack"},
    "ConfirmRequest": {"planVersion": 1},
    "CancelRequest": {"reason": "changed my mind"},
    "CancelRunRequest": {"reason": "changed my mind"},
    "WebhookRequest": {"url": "http://127.0.0.1:9/bob", "events": ["run.*"]},
    "ScheduleRequest": {"cron": "0 8 * * *", "prompt": "bob's brief"},
    # AG-UI: B's run on A's thread must not supersede A's pause either
    "RunAgentInput": {"threadId": "thread-b", "runId": "agui-run", "forwardedProps": {"supersede": True},
                      "messages": [{"id": "m1", "role": "user", "content": PROBE}]},
}
"""A valid body per request schema; the reference under test replaces its field."""


@dataclass
class Cell:
    operation: str
    method: str
    path: str
    reference: str
    location: Literal["path", "body"]
    body_schema: str | None

    @property
    def id(self) -> str:
        return f"{self.operation}-{self.reference}"


def _body_schema(op: dict[str, Any]) -> str | None:
    ref = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


def cells(doc: dict[str, Any]) -> Iterator[Cell | tuple[str, str, str]]:
    """Every (operation, reference) of the document; an operation without a reference yields
    ``(operationId, method, path)`` (only its 401 row applies)."""
    schemas = doc["components"]["schemas"]
    for path, item in doc["paths"].items():
        if path.startswith((A2A_PREFIX, ADMIN_PREFIX)):
            continue
        for method, op in item.items():
            if op.get("security") == []:
                continue
            refs: list[tuple[str, Literal["path", "body"]]] = [
                (p["name"], "path") for p in op.get("parameters", []) if p["in"] == "path"]
            body = _body_schema(op)
            if body is not None:
                refs += [(name, "body") for name in schemas[body].get("properties", {})
                         if re.fullmatch(r"[a-z]\w*Id", name) and name not in NOT_REFERENCES
                         and name not in NOT_REFERENCES_IN.get(body, ())]
            if not refs:
                yield op["operationId"], method, path
            for name, location in refs:
                yield Cell(op["operationId"], method.upper(), path, name, location, body)


def missing_creators(doc: dict[str, Any]) -> list[str]:
    return sorted({c.reference for c in cells(doc) if isinstance(c, Cell)} - set(CREATORS))


DOC = build_openapi()
CELLS = [c for c in cells(DOC) if isinstance(c, Cell)]
PLAIN = [c for c in cells(DOC) if not isinstance(c, Cell)]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxProcess]:
    base = tmp_path_factory.mktemp("sandbox")
    box = SandboxProcess.start(base, snapshot_dir=base / "snapshots")
    yield box
    box.stop()


@pytest.fixture
def api(sqlite_docstore: DocStore, sandbox: SandboxProcess) -> Iterator[Api]:
    dispatcher = RecordingDispatcher()
    rt = Runtime(make_settings(credentials_encryption_key=KEY, mcp_allow_private_urls=True,
                               sandbox_url=sandbox.url, sandbox_key=sandbox.key), store=sqlite_docstore,
                 model=FunctionModel(_model), authenticator=LocalAuthenticator(), dispatcher=dispatcher)
    set_runtime(rt)
    yield Api(create_app().test_client(), rt, dispatcher)
    set_runtime(None)


def test_the_matrix_covers_every_operation_and_reference() -> None:
    """Loud failures for what the matrix cannot test: new public operations, references without
    a creator, bodies without a template. The matrix is not empty."""
    public = {op["operationId"] for item in DOC["paths"].values() for op in item.values() if op.get("security") == []}
    assert public == PUBLIC_OPERATIONS, f"operations without authentication: {sorted(public - PUBLIC_OPERATIONS)}"
    assert DOC["security"], "the document must require authentication by default"
    missing = missing_creators(DOC)
    assert not missing, f"no creator for {missing}: add one to CREATORS (how user A creates that object via the API)"
    no_body = sorted({c.body_schema for c in CELLS if c.body_schema} - set(BODIES))
    assert not no_body, f"no request body template for {no_body}: add one to BODIES"
    assert {(c.operation, c.reference) for c in CELLS} >= {
        ("getRun", "runId"), ("getRunEvents", "runId"), ("cancelRun", "runId"), ("approve", "approvalId"),
        ("run", "threadId"),
        ("stream", "threadId"), ("run", "entityId"), ("stream", "entityId"), ("getIntegration", "provider"),
        ("connectIntegration", "provider"), ("disconnectIntegration", "provider"), ("getSession", "sessionId"),
        ("refineSession", "sessionId"), ("confirmSession", "sessionId"), ("cancelSession", "sessionId"),
        ("getSessionEvents", "sessionId"), ("getMcpServer", "name"), ("connectMcpServer", "name"),
        ("disconnectMcpServer", "name"), ("listMcpServerTools", "name")}
    assert {op for op, _, _ in READS} >= {"listRuns", "listSessions", "getUsage", "listIntegrations", "listApprovals",
                                          "listMcpServers"}
    assert {op for op, _, _ in RUN_STARTS} == {"run", "stream"}


def test_a_new_route_is_in_the_matrix_without_editing_it() -> None:
    """A route added to the document becomes rows of the matrix by itself, and one whose object
    this test cannot create yet is reported (here: a made-up widgets route)."""
    doc = json.loads(json.dumps(DOC))
    doc["paths"]["/api/agent/widgets/{widgetId}/plans/{planId}"] = {"get": {
        "operationId": "getPlan", "responses": {},
        "parameters": [{"name": "widgetId", "in": "path", "required": True, "schema": {"type": "string"}},
                       {"name": "planId", "in": "path", "required": True, "schema": {"type": "string"}}]}}
    doc["paths"]["/api/agent/approve"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {
        "$ref": "#/components/schemas/Extended"}
    doc["components"]["schemas"]["Extended"] = {"properties": {"approvalId": {}, "projectId": {}, "teamId": {}}}
    assert missing_creators(doc) == ["planId", "projectId", "widgetId"]


def _request(client: FlaskClient, cell: Cell, value: str, headers: dict[str, str]) -> Any:
    path = cell.path
    body: dict[str, Any] | None = None
    if cell.body_schema is not None:
        body = {**BODIES[cell.body_schema], **REFERENCE_BODY.get(cell.reference, {})}
    if cell.location == "path":
        path = path.replace("{" + cell.reference + "}", value)
    else:
        assert body is not None
        body[cell.reference] = value
    # Any other path parameter of the route gets a harmless value (none so far).
    path = re.sub(r"\{\w+\}", "x", path)
    return client.open(path, method=cell.method, json=body, headers=headers)


def _integrations_of(client: FlaskClient, headers: dict[str, str]) -> list[Any]:
    """Every per-user namespace: the providers' connections, the user's own MCP servers and threads
    (and their runs)."""
    return [client.get(path, headers=headers).get_json()
            for path in ("/api/integrations", "/api/integrations/mcp", "/api/integrations/a2a",
                         "/api/agent/runs", "/api/agent/threads")]


OWN_CONFLICTS = {("deleteRun", "runId"), ("deleteThread", "threadId")}
"""A's own call that answers 409, not 200: the run and thread the creators make are paused on an
approval, and only ended ones can be deleted (tests/e2e/test_user_data.py deletes ended ones)."""


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_user_b_gets_404_and_nothing_of_a(api: Api, cell: Cell) -> None:
    client = api.client
    ref = CREATORS[cell.reference](api)
    before = _integrations_of(client, ALICE)
    resp = _request(client, cell, ref.value, BOB)
    text = resp.get_data(as_text=True)
    assert SECRET not in text, f"{cell.id}: B saw A's data: {text[:500]}"
    assert resp.status_code != 403, f"{cell.id}: 403 tells B the object exists"
    if ref.scope == "global":
        assert resp.status_code == 404, f"{cell.id}: {resp.status_code} {text[:500]}"
        assert resp.get_json()["ok"] is False
    else:
        # B's own namespace: B's own object of that name (200), or none (404, e.g. reading a thread
        # id B never used); A's object is untouched whatever B read, wrote or deleted.
        assert resp.status_code in (200, 404), f"{cell.id}: {resp.status_code} {text[:500]}"
        assert _integrations_of(client, ALICE) == before
    # A itself can use the reference: the 404 above is about B.
    own = _request(client, cell, ref.value, ALICE)
    expected = (409,) if (cell.operation, cell.reference) in OWN_CONFLICTS else (200, 202)
    assert own.status_code in expected, f"{cell.id}: A's own call answered {own.status_code} {own.get_data()[:300]!r}"


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_without_credentials_every_reference_is_401(api: Api, cell: Cell) -> None:
    ref = CREATORS[cell.reference](api)
    for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Basic YWxpY2U6eA=="}):
        resp = _request(api.client, cell, ref.value, headers)
        assert resp.status_code == 401, f"{cell.id} {headers}: {resp.status_code} {resp.get_data()[:300]!r}"
        assert SECRET not in resp.get_data(as_text=True)
        assert resp.get_json()["error"]["code"]


@pytest.mark.parametrize(("operation", "method", "path"), PLAIN, ids=[p[0] for p in PLAIN])
def test_operations_without_references_are_401_without_credentials(api: Api, operation: str,
                                                                   method: str, path: str) -> None:
    schema = _body_schema(DOC["paths"][path][method])
    body = BODIES[schema] if schema else None
    resp = api.client.open(path, method=method.upper(), json=body)
    assert resp.status_code == 401, (operation, resp.status_code, resp.get_data()[:300])
    assert json.loads(resp.get_data())["ok"] is False


READS = [p for p in PLAIN if p[1] == "get"]
"""Reads without a reference (lists, usage figures): what they show is the caller's own."""
RUN_STARTS = [(op["operationId"], method, path) for path, item in DOC["paths"].items() for method, op in item.items()
              if _body_schema(op) == "RunRequest"]
"""Operations that start a model run: what the model and its tools see is the caller's own."""
VOLATILE = {"from", "to"}
"""Fields of a read that depend on when it is made (usage's default range), not on whose it is."""


def _everything_of_a(api: Api) -> None:
    for creator in CREATORS.values():
        creator(api)
    create_memory(api)


def _read(api: Api, path: str, headers: dict[str, str]) -> Any:
    resp = api.client.get(path, headers=headers)
    assert resp.status_code == 200, (path, resp.get_data()[:300])
    return {k: v for k, v in resp.get_json().items() if k not in VOLATILE}


@pytest.mark.parametrize(("operation", "method", "path"), READS, ids=[p[0] for p in READS])
def test_reads_show_b_nothing_of_a(api: Api, operation: str, method: str, path: str) -> None:
    _everything_of_a(api)
    bobs = _read(api, path, BOB)
    assert SECRET not in json.dumps(bobs), (operation, bobs)
    assert bobs == _read(api, path, {"Authorization": "Bearer dev:newcomer"}), operation
    # The read does show its caller's own objects: the equality above is about B, not an empty route.
    assert _read(api, path, ALICE) != bobs, operation


@pytest.mark.parametrize(("operation", "method", "path"), RUN_STARTS, ids=[p[0] for p in RUN_STARTS])
def test_memories_and_projects_of_a_never_reach_bs_run(api: Api, operation: str, method: str, path: str) -> None:
    _everything_of_a(api)
    answers = {}
    for who, headers in (("alice", ALICE), ("bob", BOB)):
        resp = api.client.open(path, method=method.upper(), json={"prompt": PROBE}, headers=headers)
        assert resp.status_code == 200, resp.get_data()[:300]
        answers[who] = resp.get_data(as_text=True)
    # A's own run sees A's memory and project (the probe works) ...
    assert SECRET in answers["alice"] and "search_memory" in answers["alice"], answers["alice"][:2000]
    # ... B's sees neither.
    assert "search_memory" in answers["bob"] and SECRET not in answers["bob"], answers["bob"][:2000]


ADMIN_OPERATIONS = [(op["operationId"], method, path) for path, item in DOC["paths"].items()
                    for method, op in item.items() if path.startswith(ADMIN_PREFIX)]


@pytest.mark.parametrize(("operation", "method", "path"), ADMIN_OPERATIONS, ids=[p[0] for p in ADMIN_OPERATIONS])
def test_admin_operations_are_admin_only(api: Api, operation: str, method: str, path: str) -> None:
    """A normal user (B, and A about itself) gets 403 ADMIN_ONLY and nothing of A; without
    credentials 401; the admin principal (make dev's dev-admin: token) 200."""
    create_memory(api)
    admin = {"Authorization": "Bearer dev-admin:ops"}
    before = api.client.get("/api/admin/users/alice", headers=admin).get_json()
    body = {"trustLevel": "autonomous"} if method == "patch" else None
    target = path.replace("{uid}", "alice")
    for headers in (BOB, ALICE):
        resp = api.client.open(target, method=method.upper(), json=body, headers=headers)
        assert resp.status_code == 403 and resp.get_json()["error"]["code"] == "ADMIN_ONLY", (operation, resp.data)
        assert SECRET not in resp.get_data(as_text=True)
    assert api.client.open(target, method=method.upper(), json=body).status_code == 401
    assert api.client.get("/api/admin/users/alice", headers=admin).get_json() == before  # nothing changed
    own = api.client.open(target, method=method.upper(), json=body, headers=admin)
    assert own.status_code == 200, own.get_data()[:300]
    assert ADMIN_OPERATIONS, "the admin API is in the document"
