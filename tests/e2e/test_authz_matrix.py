"""Authorization matrix (issue 14, scope 3), generated from the OpenAPI document.

Every authenticated operation in ``/openapi.json`` is a row; every object it refers to (a path
parameter, or a request-body field naming an object: ``threadId``, ``approvalId``...) is a column.
For each cell, user A first creates the object through the API; then

- user B acting on A's object gets 404, never 403, and no byte of A's data (a route whose
  reference is a per-user name, like ``{provider}``, shows B only B's own state and leaves A's
  untouched);
- without credentials the call is 401;
- A itself can use the reference (so the 404 above is about B, not about a bad id).

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
from shared.dispatch import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.openapi import build_openapi
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.e2e.test_openapi import KEY

ALICE = {"Authorization": "Bearer dev:alice"}
BOB = {"Authorization": "Bearer dev:bob"}
SECRET = "alice-secret-7f3a"
"""In everything A creates: B's answers must never contain it."""
PUBLIC_OPERATIONS = {"goals"}
"""Operations with ``security: []``: the goals agent is IAM-protected in production and stores
nothing per user. Any other operation without authentication fails this test."""
NOT_REFERENCES = {"teamId"}
"""Body fields named like references that name no object of ours (a Slack workspace id)."""


def _model(request: ModelRequest) -> Turn:
    """Pauses every first turn on a ``save_memory`` approval (so runs, threads and approvals exist)."""
    last = request.turns[-1]
    if any(p.function_response for p in last.parts):
        return text_turn(f"done {SECRET}")
    return calls_turn(call("save_memory", {"text": f"{last.text[:100]} {SECRET}"}))


@dataclass
class Ref:
    value: str
    scope: Literal["global", "per_user"]
    """``global``: an id only its owner may use (B: 404). ``per_user``: a name inside each user's
    own namespace (B sees only B's own, and A's object stays as it was)."""


Creator = Callable[[FlaskClient], Ref]


def _paused_run(client: FlaskClient) -> dict[str, Any]:
    resp = client.post("/api/agent/run", json={"prompt": f"remember {SECRET}"}, headers=ALICE)
    body = resp.get_json()
    assert resp.status_code == 200 and body["status"] == "awaiting_confirmation", body
    return body  # type: ignore[no-any-return]


def create_run(client: FlaskClient) -> Ref:
    return Ref(_paused_run(client)["runId"], "global")


def create_thread(client: FlaskClient) -> Ref:
    """A thread paused on an approval: B's ``supersede`` (see BODIES) must not touch it either."""
    return Ref(_paused_run(client)["threadId"], "global")


def create_approval(client: FlaskClient) -> Ref:
    return Ref(_paused_run(client)["approval"]["id"], "global")


def create_integration(client: FlaskClient) -> Ref:
    resp = client.post("/api/integrations/slack", json={"accessToken": f"xoxp-{SECRET}",
                                                        "accountEmail": f"{SECRET}@example.com"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    return Ref("slack", "per_user")


CREATORS: dict[str, Creator] = {
    "runId": create_run,
    "threadId": create_thread,
    "approvalId": create_approval,
    "provider": create_integration,
}
"""How A creates the object a reference names, through the API. A new kind of object (sessions,
plans, projects, memories...) needs its creator here: the test fails until it has one."""

BODIES: dict[str, dict[str, Any]] = {
    "RunRequest": {"prompt": "hello", "supersede": True},  # B must not be able to supersede A's pause
    "ApproveRequest": {"approvalId": "apr_placeholder", "decision": "approve"},
    "ConnectRequest": {"accessToken": "xoxp-bob"},
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
        for method, op in item.items():
            if op.get("security") == []:
                continue
            refs: list[tuple[str, Literal["path", "body"]]] = [
                (p["name"], "path") for p in op.get("parameters", []) if p["in"] == "path"]
            body = _body_schema(op)
            if body is not None:
                refs += [(name, "body") for name in schemas[body].get("properties", {})
                         if re.fullmatch(r"[a-z]\w*Id", name) and name not in NOT_REFERENCES]
            if not refs:
                yield op["operationId"], method, path
            for name, location in refs:
                yield Cell(op["operationId"], method.upper(), path, name, location, body)


def missing_creators(doc: dict[str, Any]) -> list[str]:
    return sorted({c.reference for c in cells(doc) if isinstance(c, Cell)} - set(CREATORS))


DOC = build_openapi()
CELLS = [c for c in cells(DOC) if isinstance(c, Cell)]
PLAIN = [c for c in cells(DOC) if not isinstance(c, Cell)]


@pytest.fixture
def client(sqlite_docstore: DocStore) -> Iterator[FlaskClient]:
    rt = Runtime(make_settings(credentials_encryption_key=KEY), store=sqlite_docstore,
                 model=FunctionModel(_model), authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    set_runtime(rt)
    yield create_app().test_client()
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
        ("getRun", "runId"), ("getRunEvents", "runId"), ("approve", "approvalId"), ("run", "threadId"),
        ("stream", "threadId"), ("getIntegration", "provider"), ("connectIntegration", "provider"),
        ("disconnectIntegration", "provider")}


def test_a_new_route_is_in_the_matrix_without_editing_it() -> None:
    """A route added to the document becomes rows of the matrix by itself, and one whose object
    this test cannot create yet is reported (here: a made-up sessions route)."""
    doc = json.loads(json.dumps(DOC))
    doc["paths"]["/api/agent/sessions/{sessionId}/plans/{planId}"] = {"get": {
        "operationId": "getPlan", "responses": {},
        "parameters": [{"name": "sessionId", "in": "path", "required": True, "schema": {"type": "string"}},
                       {"name": "planId", "in": "path", "required": True, "schema": {"type": "string"}}]}}
    doc["paths"]["/api/agent/approve"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {
        "$ref": "#/components/schemas/Extended"}
    doc["components"]["schemas"]["Extended"] = {"properties": {"approvalId": {}, "projectId": {}, "teamId": {}}}
    assert missing_creators(doc) == ["planId", "projectId", "sessionId"]


def _request(client: FlaskClient, cell: Cell, value: str, headers: dict[str, str]) -> Any:
    path = cell.path
    body: dict[str, Any] | None = None
    if cell.body_schema is not None:
        body = dict(BODIES[cell.body_schema])
    if cell.location == "path":
        path = path.replace("{" + cell.reference + "}", value)
    else:
        assert body is not None
        body[cell.reference] = value
    # Any other path parameter of the route gets a harmless value (none so far).
    path = re.sub(r"\{\w+\}", "x", path)
    return client.open(path, method=cell.method, json=body, headers=headers)


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_user_b_gets_404_and_nothing_of_a(client: FlaskClient, cell: Cell) -> None:
    ref = CREATORS[cell.reference](client)
    before = client.get("/api/integrations", headers=ALICE).get_json()
    resp = _request(client, cell, ref.value, BOB)
    text = resp.get_data(as_text=True)
    assert SECRET not in text, f"{cell.id}: B saw A's data: {text[:500]}"
    assert resp.status_code != 403, f"{cell.id}: 403 tells B the object exists"
    if ref.scope == "global":
        assert resp.status_code == 404, f"{cell.id}: {resp.status_code} {text[:500]}"
        assert resp.get_json()["ok"] is False
    else:
        assert resp.status_code == 200, f"{cell.id}: {resp.status_code} {text[:500]}"
        # B's own namespace: A's object is untouched (whatever B read, wrote or deleted).
        assert client.get("/api/integrations", headers=ALICE).get_json() == before
    # A itself can use the reference: the 404 above is about B.
    own = _request(client, cell, ref.value, ALICE)
    assert own.status_code in (200, 202), f"{cell.id}: A's own call answered {own.status_code} {own.get_data()[:300]!r}"


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_without_credentials_every_reference_is_401(client: FlaskClient, cell: Cell) -> None:
    ref = CREATORS[cell.reference](client)
    for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Basic YWxpY2U6eA=="}):
        resp = _request(client, cell, ref.value, headers)
        assert resp.status_code == 401, f"{cell.id} {headers}: {resp.status_code} {resp.get_data()[:300]!r}"
        assert SECRET not in resp.get_data(as_text=True)
        assert resp.get_json()["error"]["code"]


@pytest.mark.parametrize(("operation", "method", "path"), PLAIN, ids=[p[0] for p in PLAIN])
def test_operations_without_references_are_401_without_credentials(client: FlaskClient, operation: str,
                                                                   method: str, path: str) -> None:
    schema = _body_schema(DOC["paths"][path][method])
    body = BODIES[schema] if schema else None
    resp = client.open(path, method=method.upper(), json=body)
    assert resp.status_code == 401, (operation, resp.status_code, resp.get_data()[:300])
    assert json.loads(resp.get_data())["ok"] is False
