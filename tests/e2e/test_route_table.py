"""One route table (issue 22): a route added to ``shared/routes.py`` alone is served by the dev server
and by its deployed function (main.py), documented in ``/openapi.json`` and deployed by the infra
catalogue, with nothing else edited.

The test adds a function and its route to the table (and nothing else) and drives the real dev app,
the real functions-framework app of main.py, the real OpenAPI builder and the real catalogue.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

import flask
import pytest
from functions_framework import create_app as create_function_app
from pydantic import BaseModel

from devserver import create_app
from functions.common import authenticated_uid
from shared import routes
from shared.errors import NotFound
from shared.models.scripted import ScriptedModel
from shared.runtime import get_runtime
from shared.web import json_response
from tests.e2e.conftest import ALICE, Install

REPO = Path(__file__).resolve().parents[2]


class Greeting(BaseModel):
    """The new route's answer."""

    ok: bool
    greeting: str


def greet(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    """The new route's handler: authenticates like every route; an unknown name is a domain error."""
    uid = authenticated_uid(get_runtime(), request)
    if path["name"] == "nobody":
        raise NotFound("nobody to greet", code="NO_ONE")
    return json_response(Greeting(ok=True, greeting=f"hello {path['name']} from {uid}").model_dump())


HERE = __name__
NEW_FUNCTION = routes.Function("greetings", secrets=("gemini",), firestore="none", summary="greetings")
NEW_ROUTE = routes.Route("GET", "/api/greetings/{name}", "getGreeting", "greetings", f"{HERE}:greet",
                         replies=(routes.Reply(200, "a greeting", model=f"{HERE}:Greeting"),), errors=(401, 404),
                         description="Greet someone.")


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch, install: Install) -> Iterator[None]:
    install(ScriptedModel([]))
    monkeypatch.setattr(routes, "FUNCTIONS", (*routes.FUNCTIONS, NEW_FUNCTION))
    monkeypatch.setattr(routes, "ROUTES", (*routes.ROUTES, NEW_ROUTE))
    yield


def test_the_dev_server_serves_a_route_added_to_the_table(table: None) -> None:
    client = create_app().test_client()
    resp = client.get("/api/greetings/bob", headers=ALICE)
    assert resp.status_code == 200 and resp.get_json() == {"ok": True, "greeting": "hello bob from alice"}
    assert client.get("/api/greetings/bob").status_code == 401
    missing = client.get("/api/greetings/nobody", headers=ALICE)
    assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "NO_ONE"
    wrong = client.post("/api/greetings/bob", headers=ALICE)
    assert wrong.status_code == 405 and wrong.headers["Allow"] == "GET"


def test_main_py_deploys_a_function_added_to_the_table(table: None) -> None:
    fn = create_function_app("greetings", "main.py").test_client()  # type: ignore[no-untyped-call]
    resp = fn.get("/api/greetings/bob", headers=ALICE)
    assert resp.status_code == 200 and resp.get_json()["greeting"] == "hello bob from alice"
    other = fn.get("/api/agent/runs", headers=ALICE)  # another function's route: not this function's
    assert other.status_code == 404 and other.get_json()["error"]["code"] == "ROUTE_NOT_FOUND"


def test_the_openapi_document_documents_a_route_added_to_the_table(table: None) -> None:
    doc = create_app().test_client().get("/openapi.json").get_json()
    op = doc["paths"]["/api/greetings/{name}"]["get"]
    assert op["operationId"] == "getGreeting" and op["description"] == "Greet someone."
    assert op["parameters"] == [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
    assert op["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Greeting"}
    # 400: INVALID_QUERY, 409: STORED_VALUE_INVALID (any authenticated route)
    assert set(op["responses"]) == {"200", "400", "401", "404", "409", "429", "500"}
    assert doc["components"]["schemas"]["Greeting"]["required"] == ["ok", "greeting"]
    assert doc["components"]["schemas"]["Greeting"]["additionalProperties"] is False


def _infra_catalog() -> ModuleType:
    """infra/agent_infra/catalog.py (it imports no pulumi), loaded from its file."""
    spec = importlib.util.spec_from_file_location("infra_catalog_under_test",
                                                  REPO / "infra" / "agent_infra" / "catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


def test_the_infra_catalogue_deploys_a_function_added_to_the_table(table: None) -> None:
    infra = _infra_catalog()
    assert [s.name for s in infra.CATALOG] == [f.name for f in routes.FUNCTIONS if f is not NEW_FUNCTION]
    specs = {s.name: s for s in infra.catalog(routes.FUNCTIONS, routes.ROUTES)}
    new = specs["greetings"]
    assert (new.entry_point, new.trigger, new.route, new.secrets, new.firestore) == (
        "greetings", "http", "GET /api/greetings/{name}", ("gemini",), "none")
